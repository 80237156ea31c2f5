{{/*
Labels Helm adds to every object, next to the app.kubernetes.io/name and component labels the
objects carry in config/. Object names are fixed (the admission policy matches the ServiceAccount
gitpeer-agent), so one release per cluster.
*/}}
{{- define "gitpeer.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The agent's pod selector, the same as config/manager's. */}}
{{- define "gitpeer.selectorLabels" -}}
app.kubernetes.io/name: gitpeer
app.kubernetes.io/component: agent
{{- end }}

{{- define "gitpeer.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default (printf "v%s" .Chart.AppVersion) }}
{{- end }}

{{- define "gitpeer.dataClaim" -}}
{{ .Values.data.persistence.existingClaim | default "gitpeer-data" }}
{{- end }}

{{/* An egress rule of the NetworkPolicy: TCP to .ports, to the peers .to (any when empty). */}}
{{- define "gitpeer.egressRule" -}}
{{- if .ports -}}
- ports:
  {{- range .ports }}
  - port: {{ . }}
    protocol: TCP
  {{- end }}
  {{- with .to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* The labels of an alert: its .severity and the chart's alertLabels (.labels). */}}
{{- define "gitpeer.alertLabels" -}}
severity: {{ .severity }}
{{- with .labels }}
{{ toYaml . }}
{{- end }}
{{- end }}
