// Package chart_test checks the Helm chart in charts/gitpeer: its generated templates are those
// `make chart` writes from config/, with default values it renders the very objects of
// `kubectl apply -k config/default` (but the Namespace, which Helm leaves to --create-namespace),
// its values do what values.yaml says, and it installs and upgrades on a real control plane.
package chart_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gitpeer/gitpeer/test/chart/chartgen"
)

const (
	chartDir        = "../../charts/gitpeer"
	configDir       = "../../config"
	systemNamespace = "gitpeer-system"
	tenantRole      = "liqo-remote-controlplane"
)

// helmLabels are the labels the chart adds to config/'s (templates/_helpers.tpl).
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}

// TestGeneratedUpToDate fails when config/ changed without `make chart`, or a generated template
// was edited by hand.
func TestGeneratedUpToDate(t *testing.T) {
	want, err := chartgen.Generate(configDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(chartDir, chartgen.Dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, e := range entries {
		if got[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !bytes.Equal(got[name], want[name]) {
			t.Errorf("%s/%s is not what `make chart` generates from config/: run make chart", dir, name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s/%s is not generated from config/: run make chart", dir, name)
		}
	}
}

// TestDefaultsMatchConfig renders the chart with its default values and compares every object,
// whole (rules, policy expressions, CRD schemas, the Deployment's pod), with config/default's.
func TestDefaultsMatchConfig(t *testing.T) {
	rendered := index(t, render(t, systemNamespace, nil))
	built, err := chartgen.Build(mustAbs(t, filepath.Join(configDir, "default")))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{}
	for _, r := range built {
		if r.GetKind() == "Namespace" {
			continue // the release namespace
		}
		// Map, not AsYAML: kustomize's YAML printer adds blank lines into the folded CEL expressions.
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		text, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		o := decode(t, string(text))[0] // numbers as float64, as in the chart's decoded manifest
		want[key(o)] = o.Object
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		got, ok := rendered[k]
		if !ok {
			t.Errorf("the chart does not install %s", k)
			continue
		}
		if d := cmp.Diff(want[k], withoutHelmMetadata(got)); d != "" {
			t.Errorf("%s differs from config/default (-config +chart):\n%s", k, d)
		}
	}
	for k := range rendered {
		if _, ok := want[k]; !ok {
			t.Errorf("the chart installs %s, config/default does not", k)
		}
	}
	if len(want) < 15 {
		t.Errorf("config/default has only %d objects besides its namespace", len(want))
	}
}

// TestVersion checks the chart is the release's: version and appVersion are VERSION's.
func TestVersion(t *testing.T) {
	raw, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(raw))
	if ch := loadChart(t); ch.Metadata.Version != version || ch.Metadata.AppVersion != version {
		t.Errorf("Chart.yaml version %s appVersion %s, VERSION %s", ch.Metadata.Version, ch.Metadata.AppVersion, version)
	}
}

// TestValues renders the chart with non-default values and checks each does what values.yaml says.
func TestValues(t *testing.T) {
	t.Run("Liqo installed", func(t *testing.T) {
		objs := index(t, render(t, systemNamespace, map[string]any{"installLiqoCRDs": false, "installTenantRole": false}))
		for k := range objs {
			if strings.HasPrefix(k, "CustomResourceDefinition//") && strings.HasSuffix(k, ".authentication.liqo.io") ||
				k == "ClusterRole//"+tenantRole {
				t.Errorf("%s is installed with installLiqoCRDs=false installTenantRole=false", k)
			}
		}
		for _, kn := range [][2]string{{"CustomResourceDefinition", "peeringrepositories.gitpeer.io"}, {"ClusterRole", "gitpeer-agent"},
			{"ValidatingAdmissionPolicy", "gitpeer-agent-writes"}, {"Deployment", "gitpeer-agent"}} {
			if find(objs, kn[0], kn[1]) == nil {
				t.Errorf("%s %s is missing with installLiqoCRDs=false installTenantRole=false", kn[0], kn[1])
			}
		}
	})
	t.Run("release namespace", func(t *testing.T) {
		for k, o := range index(t, render(t, "peering", nil)) {
			if ns := o.GetNamespace(); ns != "" && ns != "peering" {
				t.Errorf("%s is in namespace %s, not the release's", k, ns)
			}
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			for _, s := range subjects {
				if ns := s.(map[string]any)["namespace"]; ns != nil && ns != "peering" {
					t.Errorf("%s binds a subject in namespace %v", k, ns)
				}
			}
		}
	})
	t.Run("image, replicas, scheduling", func(t *testing.T) {
		objs := index(t, render(t, systemNamespace, map[string]any{
			"image":          map[string]any{"repository": "registry.example.com/gitpeer", "tag": "v9.9.9", "pullPolicy": "Always"},
			"replicas":       2,
			"nodeSelector":   map[string]any{"kubernetes.io/os": "linux"},
			"tolerations":    []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
			"affinity":       map[string]any{"nodeAffinity": map[string]any{}},
			"extraArgs":      []any{"--webhook-tls-cert-file=/tls/tls.crt"},
			"podAnnotations": map[string]any{"example.com/a": "b"},
		}))
		pod := field[map[string]any](t, objs["Deployment/"+systemNamespace+"/gitpeer-agent"], "spec", "template", "spec")
		c := pod["containers"].([]any)[0].(map[string]any)
		if c["image"] != "registry.example.com/gitpeer:v9.9.9" || c["imagePullPolicy"] != "Always" {
			t.Errorf("image %v %v", c["image"], c["imagePullPolicy"])
		}
		if !slices.Contains(c["args"].([]any), any("--webhook-tls-cert-file=/tls/tls.crt")) ||
			!slices.Contains(c["args"].([]any), any("--enable-leader-election")) {
			t.Errorf("args %v", c["args"])
		}
		if pod["nodeSelector"] == nil || pod["tolerations"] == nil || pod["affinity"] == nil {
			t.Errorf("scheduling values missing from the pod: %v", pod)
		}
		if r := field[float64](t, objs["Deployment/"+systemNamespace+"/gitpeer-agent"], "spec", "replicas"); r != 2 {
			t.Errorf("replicas = %v", r)
		}
	})
	t.Run("default image is the appVersion's", func(t *testing.T) {
		ch, err := loader.Load(chartDir)
		if err != nil {
			t.Fatal(err)
		}
		c := containers(t, index(t, render(t, systemNamespace, nil)))[0]
		if want := "ghcr.io/gitpeer/gitpeer:v" + ch.Metadata.AppVersion; c["image"] != want {
			t.Errorf("image = %v, want %s", c["image"], want)
		}
	})
	t.Run("replicas without leader election", func(t *testing.T) {
		_, err := renderErr(t, systemNamespace, map[string]any{"replicas": 2, "leaderElection": map[string]any{"enabled": false}})
		if err == nil || !strings.Contains(err.Error(), "leaderElection") {
			t.Errorf("two replicas without leader election rendered: %v", err)
		}
		c := containers(t, index(t, render(t, systemNamespace, map[string]any{"leaderElection": map[string]any{"enabled": false}})))[0]
		if slices.Contains(c["args"].([]any), any("--enable-leader-election")) {
			t.Errorf("leader election still enabled: %v", c["args"])
		}
	})
	t.Run("agent flags", func(t *testing.T) {
		if args := containers(t, index(t, render(t, systemNamespace, nil)))[0]["args"].([]any); !slices.Contains(args, any("--kube-api-qps=auto")) {
			t.Errorf("--kube-api-qps=auto missing from the default args %v", args)
		}
		// float64 as Helm reads a values file: a large integer must not render as 1e+06.
		c := containers(t, index(t, render(t, systemNamespace, map[string]any{
			"concurrent": 8, "peeringWorkers": float64(32), "roundLimit": float64(500), "kubeAPI": map[string]any{"qps": 7.5, "burst": float64(1_000_000)},
			"memoryLimit": "400Mi",
		})))[0]
		for _, arg := range []string{"--concurrent=8", "--peering-workers=32", "--round-limit=500", "--kube-api-qps=7.5",
			"--kube-api-burst=1000000", "--memory-limit=400Mi"} {
			if !slices.Contains(c["args"].([]any), any(arg)) {
				t.Errorf("%s missing from args %v", arg, c["args"])
			}
		}
	})
	t.Run("persistent data", func(t *testing.T) {
		objs := index(t, render(t, systemNamespace, map[string]any{"data": map[string]any{"persistence": map[string]any{
			"enabled": true, "size": "5Gi", "storageClassName": "fast"}}}))
		pvc := objs["PersistentVolumeClaim/"+systemNamespace+"/gitpeer-data"]
		if pvc == nil || field[string](t, pvc, "spec", "resources", "requests", "storage") != "5Gi" ||
			field[string](t, pvc, "spec", "storageClassName") != "fast" {
			t.Fatalf("no 5Gi PVC of class fast: %v", pvc)
		}
		if claim := dataVolume(t, objs)["persistentVolumeClaim"]; claim == nil || claim.(map[string]any)["claimName"] != "gitpeer-data" {
			t.Errorf("data volume %v", dataVolume(t, objs))
		}
		objs = index(t, render(t, systemNamespace, map[string]any{"data": map[string]any{"persistence": map[string]any{
			"enabled": true, "existingClaim": "mine"}}}))
		if objs["PersistentVolumeClaim/"+systemNamespace+"/gitpeer-data"] != nil {
			t.Error("a PVC is created although existingClaim is set")
		}
		if claim := dataVolume(t, objs)["persistentVolumeClaim"]; claim == nil || claim.(map[string]any)["claimName"] != "mine" {
			t.Errorf("data volume %v", dataVolume(t, objs))
		}
	})
	t.Run("webhook ingress with TLS", func(t *testing.T) {
		objs := index(t, render(t, systemNamespace, map[string]any{"webhook": map[string]any{"ingress": map[string]any{
			"enabled": true, "className": "nginx",
			"hosts": []any{map[string]any{"host": "hooks.example.com", "paths": []any{map[string]any{"path": "/hook", "pathType": "Prefix"}}}},
			"tls":   []any{map[string]any{"secretName": "hooks-tls", "hosts": []any{"hooks.example.com"}}},
		}}}))
		ing := objs["Ingress/"+systemNamespace+"/gitpeer-webhook"]
		if ing == nil {
			t.Fatal("no Ingress")
		}
		rules := field[[]any](t, ing, "spec", "rules")
		backend := rules[0].(map[string]any)["http"].(map[string]any)["paths"].([]any)[0].(map[string]any)["backend"]
		svc := backend.(map[string]any)["service"].(map[string]any)
		if svc["name"] != "gitpeer-webhook" || objs["Service/"+systemNamespace+"/gitpeer-webhook"] == nil {
			t.Errorf("the Ingress routes to %v, not the webhook Service", svc)
		}
		if tls := field[[]any](t, ing, "spec", "tls"); tls[0].(map[string]any)["secretName"] != "hooks-tls" {
			t.Errorf("tls %v", tls)
		}
	})
	t.Run("ServiceMonitor", func(t *testing.T) {
		objs := index(t, render(t, systemNamespace, map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{
			"enabled": true, "interval": "30s", "labels": map[string]any{"release": "prometheus"}}}}))
		sm, svc := objs["ServiceMonitor/"+systemNamespace+"/gitpeer-agent"], objs["Service/"+systemNamespace+"/gitpeer-metrics"]
		if sm == nil || svc == nil {
			t.Fatalf("ServiceMonitor %v, metrics Service %v", sm != nil, svc != nil)
		}
		if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetLabels()["release"] != "prometheus" {
			t.Errorf("ServiceMonitor %s labels %v", sm.GetAPIVersion(), sm.GetLabels())
		}
		sel := field[map[string]any](t, sm, "spec", "selector", "matchLabels")
		for k, v := range sel {
			if svc.GetLabels()[k] != v {
				t.Errorf("the ServiceMonitor selects %s=%v, the metrics Service has %v", k, v, svc.GetLabels())
			}
		}
		if objs["Service/"+systemNamespace+"/gitpeer-webhook"].GetLabels()["gitpeer.io/metrics"] != "" {
			t.Error("the ServiceMonitor would also select the webhook Service")
		}
	})
}

// everyValue is a values file that sets every optional value of the chart.
const everyValue = "testdata/every-value.yaml"

// readValues reads a values file as Helm does.
func readValues(t *testing.T, path string) map[string]any {
	t.Helper()
	values, err := chartutil.ReadValuesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return values
}

// TestEveryValue renders the chart with every optional value set (testdata/every-value.yaml) and
// checks each reaches its object.
func TestEveryValue(t *testing.T) {
	objs := index(t, render(t, systemNamespace, readValues(t, everyValue)))
	checkEveryValue(t, objs)
	rule := objs["PrometheusRule/"+systemNamespace+"/gitpeer-agent"]
	if rule == nil || rule.GetLabels()["release"] != "prometheus" {
		t.Fatalf("PrometheusRule %v", rule)
	}
	for _, r := range alertRules(t, rule) {
		if labels := r["labels"].(map[string]any); labels["team"] != "platform" || labels["severity"] == nil {
			t.Errorf("alert %v labels %v", r["alert"], labels)
		}
	}
	if !strings.Contains(fmt.Sprint(alertRules(t, rule)), "< 21600") {
		t.Error("certificateExpiryHours 6 is not the expiring alert's 21600 seconds")
	}
	if objs["ServiceMonitor/"+systemNamespace+"/gitpeer-agent"] == nil {
		t.Error("no ServiceMonitor")
	}
}

// checkEveryValue checks the objects of testdata/every-value.yaml carry its values, whether
// rendered or installed.
func checkEveryValue(t *testing.T, objs map[string]*unstructured.Unstructured) {
	t.Helper()
	dep := objs["Deployment/"+systemNamespace+"/gitpeer-agent"]
	pod := field[map[string]any](t, dep, "spec", "template", "spec")
	if got := fmt.Sprint(pod["imagePullSecrets"]); got != "[map[name:regcred]]" {
		t.Errorf("imagePullSecrets %s", got)
	}
	if pod["priorityClassName"] != "gitpeer-critical" {
		t.Errorf("priorityClassName %v", pod["priorityClassName"])
	}
	podLabels := field[map[string]any](t, dep, "spec", "template", "metadata", "labels")
	annotations := field[map[string]any](t, dep, "spec", "template", "metadata", "annotations")
	if podLabels["team"] != "platform" || podLabels["app.kubernetes.io/name"] != "gitpeer" || annotations["example.com/owner"] != "platform" {
		t.Errorf("pod labels %v annotations %v", podLabels, annotations)
	}
	if dep.GetLabels()["team"] != "" {
		t.Error("podLabels are on the Deployment too")
	}
	c := pod["containers"].([]any)[0].(map[string]any)
	env := map[string]any{}
	for _, e := range c["env"].([]any) {
		env[e.(map[string]any)["name"].(string)] = e.(map[string]any)["value"]
	}
	if env["HTTPS_PROXY"] != "http://proxy.example.com:3128" || env["NO_PROXY"] == nil || env["HOME"] != "/tmp" {
		t.Errorf("env %v", env)
	}
	if !slices.ContainsFunc(c["volumeMounts"].([]any), func(m any) bool {
		return m.(map[string]any)["name"] == "webhook-tls" && m.(map[string]any)["mountPath"] == "/tls"
	}) {
		t.Errorf("volumeMounts %v", c["volumeMounts"])
	}
	if !slices.ContainsFunc(pod["volumes"].([]any), func(v any) bool {
		return v.(map[string]any)["name"] == "webhook-tls" && v.(map[string]any)["secret"] != nil
	}) {
		t.Errorf("volumes %v", pod["volumes"])
	}
	if pod["nodeSelector"] == nil || pod["tolerations"] == nil || pod["affinity"] == nil {
		t.Errorf("scheduling values missing from the pod: %v", pod)
	}
	pdb := objs["PodDisruptionBudget/"+systemNamespace+"/gitpeer-agent"]
	if pdb == nil {
		t.Fatal("no PodDisruptionBudget")
	}
	// float64 as rendered, int64 as stored.
	if maxUnavailable, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable"); fmt.Sprint(maxUnavailable) != "1" {
		t.Errorf("PodDisruptionBudget maxUnavailable %v", maxUnavailable)
	}
	if sel := field[map[string]any](t, pdb, "spec", "selector", "matchLabels"); !matches(sel, podLabels) {
		t.Errorf("the PodDisruptionBudget selects %v, not the agent's pod %v", sel, podLabels)
	}
	np := objs["NetworkPolicy/"+systemNamespace+"/gitpeer-agent"]
	if np == nil {
		t.Fatal("no NetworkPolicy")
	}
	if sel := field[map[string]any](t, np, "spec", "podSelector", "matchLabels"); !matches(sel, podLabels) {
		t.Errorf("the NetworkPolicy selects %v, not the agent's pod %v", sel, podLabels)
	}
	policy := fmt.Sprint(field[map[string]any](t, np, "spec"))
	for _, want := range []string{"port:http-metrics", "port:http-webhook", "kubernetes.io/metadata.name:ingress-nginx", "port:53 protocol:UDP",
		"cidr:10.96.0.1/32", "port:6443", "port:3128", "cidr:192.0.2.0/24", "port:8443"} {
		if !strings.Contains(policy, want) {
			t.Errorf("the NetworkPolicy has no %s: %s", want, policy)
		}
	}
}

// matches reports whether labels has every label of selector.
func matches(selector, labels map[string]any) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// alertRules returns the rules of the PrometheusRule's groups.
func alertRules(t *testing.T, rule *unstructured.Unstructured) []map[string]any {
	t.Helper()
	var rules []map[string]any
	for _, g := range field[[]any](t, rule, "spec", "groups") {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			rules = append(rules, r.(map[string]any))
		}
	}
	return rules
}

// TestSchemaRejectsTypos: values.schema.json refuses a misspelt key, at the top and inside the
// chart's own objects, and a pod label that would change the pod's selector.
func TestSchemaRejectsTypos(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"imagePullSecret": []any{map[string]any{"name": "regcred"}}}, "'imagePullSecret' not allowed"},
		{map[string]any{"networkPolicy": map[string]any{"enable": true}}, "'enable' not allowed"},
		{map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "certificateExpiry": "4h"}}}, "'certificateExpiry' not allowed"},
		{map[string]any{"extraEnv": []any{map[string]any{"value": "http://proxy:3128"}}}, "missing property 'name'"},
		{map[string]any{"podLabels": map[string]any{"app.kubernetes.io/name": "other"}}, "podLabels"},
		{map[string]any{"podDisruptionBudget": map[string]any{"enabled": true, "maxUnavailable": "half"}}, "maxUnavailable"},
		{map[string]any{"extraVolumes": []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}}}, "extraVolumes"},
		{map[string]any{"kubeAPI": map[string]any{"qps": "fast"}}, "qps"},
		{map[string]any{"kubeAPI": map[string]any{"qps": 0}}, "qps"},
	} {
		_, err := renderErr(t, systemNamespace, tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("values %v: %v, want an error with %q", tc.values, err, tc.want)
		}
	}
}

// TestAlertRules parses the expression of each alert of the PrometheusRule with Prometheus's own
// parser and checks it reads only metrics the agent exports (declared in reconciler/metrics.go)
// and docs/operations.md describes it.
func TestAlertRules(t *testing.T) {
	source, err := os.ReadFile("../../reconciler/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile(`"(gitpeer_[a-z_]+)"`).FindAllStringSubmatch(string(source), -1) {
		exported[m[1]] = true
	}
	objs := index(t, render(t, systemNamespace, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}}))
	rules := alertRules(t, objs["PrometheusRule/"+systemNamespace+"/gitpeer-agent"])
	if len(rules) < 4 {
		t.Errorf("%d alerts", len(rules))
	}
	p := parser.NewParser(parser.Options{})
	for _, r := range rules {
		if !strings.Contains(string(doc), "| `"+r["alert"].(string)+"` |") {
			t.Errorf("docs/operations.md does not describe alert %v", r["alert"])
		}
		expr, err := p.ParseExpr(r["expr"].(string))
		if err != nil {
			t.Errorf("alert %v: %v", r["alert"], err)
			continue
		}
		for _, selector := range parser.ExtractSelectors(expr) {
			for _, m := range selector {
				if m.Name == labels.MetricName && !exported[m.Value] {
					t.Errorf("alert %v reads %s, which the agent does not export (%v)", r["alert"], m.Value, slices.Sorted(maps.Keys(exported)))
				}
			}
		}
		if _, err := model.ParseDuration(r["for"].(string)); err != nil {
			t.Errorf("alert %v: for %v", r["alert"], err)
		}
	}
}

// render renders the chart as `helm template` does (client only), with values over the defaults.
func render(t *testing.T, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := renderErr(t, namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func renderErr(t *testing.T, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	ch := loadChart(t)
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities.Copy(),
		Log:          t.Logf,
	}
	// The oldest Kubernetes the chart supports (the admission policy's API is GA in 1.30).
	kubeVersion, err := chartutil.ParseKubeVersion("v1.30.0")
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(cfg)
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace, install.KubeVersion = "gitpeer", namespace, kubeVersion
	rel, err := install.Run(ch, values)
	if err != nil {
		return nil, err
	}
	return decode(t, rel.Manifest), nil
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// decode parses a multi-document manifest.
func decode(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		o := &unstructured.Unstructured{}
		err := dec.Decode(&o.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decode manifest: %v", err)
		}
		if len(o.Object) > 0 {
			objs = append(objs, o)
		}
	}
}

// key names an object as kind/namespace/name.
func key(o *unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// index maps objects by key, failing on duplicates.
func index(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if m[key(o)] != nil {
			t.Errorf("%s is rendered twice", key(o))
		}
		m[key(o)] = o
	}
	return m
}

// find is the object of that kind and name, in whichever namespace: kustomize gives
// config/default's ValidatingAdmissionPolicy and its binding a namespace (the API server drops it).
func find(objs map[string]*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// withoutHelmMetadata is o without what the chart adds to config/'s objects: the Helm labels
// (also on the pod template) and the keep policy of the CRDs.
func withoutHelmMetadata(o *unstructured.Unstructured) map[string]any {
	o = o.DeepCopy()
	strip := func(fields ...string) {
		labels, _, _ := unstructured.NestedStringMap(o.Object, append(fields, "labels")...)
		if labels == nil {
			return
		}
		for _, l := range helmLabels {
			delete(labels, l)
		}
		if len(labels) == 0 {
			unstructured.RemoveNestedField(o.Object, append(fields, "labels")...)
			return
		}
		_ = unstructured.SetNestedStringMap(o.Object, labels, append(fields, "labels")...)
	}
	strip("metadata")
	if o.GetKind() == "Deployment" {
		strip("spec", "template", "metadata")
	}
	annotations := o.GetAnnotations()
	delete(annotations, "helm.sh/resource-policy")
	o.SetAnnotations(annotations)
	return o.Object
}

// field reads a typed field of o, failing when it is absent or of another type.
func field[T any](t *testing.T, o *unstructured.Unstructured, fields ...string) T {
	t.Helper()
	if o == nil {
		t.Fatalf("no object to read %v from", fields)
	}
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, fields...)
	typed, isT := v.(T)
	if !ok || err != nil || !isT {
		t.Fatalf("%s: %v is %T %v", key(o), fields, v, err)
	}
	return typed
}

func containers(t *testing.T, objs map[string]*unstructured.Unstructured) []map[string]any {
	t.Helper()
	var cs []map[string]any
	for _, c := range field[[]any](t, objs["Deployment/"+systemNamespace+"/gitpeer-agent"], "spec", "template", "spec", "containers") {
		cs = append(cs, c.(map[string]any))
	}
	return cs
}

func dataVolume(t *testing.T, objs map[string]*unstructured.Unstructured) map[string]any {
	t.Helper()
	for _, v := range field[[]any](t, objs["Deployment/"+systemNamespace+"/gitpeer-agent"], "spec", "template", "spec", "volumes") {
		if v.(map[string]any)["name"] == "data" {
			return v.(map[string]any)
		}
	}
	t.Fatal("no data volume")
	return nil
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
