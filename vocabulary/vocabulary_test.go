package vocabulary_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestWireVocabulary pins the names gitpeer writes into the cluster and into
// peering repositories. They are a wire format: repositories and commit
// histories written by one version are read by agents, CI (`gitpeer verify`)
// and `gitpeer audit`/`records` of other versions, and users select objects
// by these labels and alert on these event reasons, so a rename silently
// loses peerings, history or alerts. Change them only with a migration, and
// then change this test.
func TestWireVocabulary(t *testing.T) {
	var kinds []string
	for _, k := range vocabulary.FileKinds {
		kinds = append(kinds, string(k))
	}
	if want := []string{"request.yaml", "nonce.yaml", "tenant.yaml", "identity.yaml"}; !slices.Equal(kinds, want) {
		t.Errorf("document files %v, want %v", kinds, want)
	}
	if want := []string{"request", "issue-nonce", "propose-tenant", "issue-identity", "renew-identity", "revoke", "publish-terms"}; !slices.Equal(vocabulary.Actions, want) {
		t.Errorf("actions %v, want %v", vocabulary.Actions, want)
	}
	for got, want := range map[string]string{
		vocabulary.KustomizationFile: "kustomization.yaml",
		vocabulary.TermsFile:         "terms.yaml",

		vocabulary.TrailerAction:   "Gitpeer-Action",
		vocabulary.TrailerProvider: "Gitpeer-Provider",
		vocabulary.TrailerConsumer: "Gitpeer-Consumer",
		vocabulary.TrailerSerial:   "Gitpeer-Serial",
		vocabulary.TrailerExpires:  "Gitpeer-Expires",
		vocabulary.TrailerSummary:  "Gitpeer-Summary",
		vocabulary.TrailerOverride: "Gitpeer-Override",

		vocabulary.ManagedByLabel: "app.kubernetes.io/managed-by",
		vocabulary.ManagedBy:      "gitpeer",
		vocabulary.OwnerLabel:     "gitpeer.io/owner",
		vocabulary.ConsumerLabel:  "gitpeer.io/consumer",
		vocabulary.SignTestLabel:  "gitpeer.io/check",

		vocabulary.TenantSignatureAnnotation: "gitpeer.io/tenant-signature-sha256",
		vocabulary.RenewsAnnotation:          "gitpeer.io/renews",
		vocabulary.OverridesAnnotation:       "gitpeer.io/overrides",
		vocabulary.ModeAnnotation:            "gitpeer.io/mode",
		vocabulary.PinnedKeyAnnotation:       "gitpeer.io/pinned-public-key-sha256",
		vocabulary.PinnedCAAnnotation:        "gitpeer.io/pinned-ca-sha256",
		vocabulary.PinnedProviderAnnotation:  "gitpeer.io/pinned-provider-sha256",
		vocabulary.RevokedAnnotation:         "gitpeer.io/revoked-at",
		vocabulary.ProposedAnnotation:        "gitpeer.io/proposed",

		vocabulary.ReasonAdopted:             "Adopted",
		vocabulary.ReasonOwnershipMigrated:   "OwnershipMigrated",
		vocabulary.ReasonOrphaned:            "Orphaned",
		vocabulary.ReasonRequestsDeferred:    "RequestsDeferred",
		vocabulary.ReasonRecordsMigrated:     "RecordsMigrated",
		vocabulary.ReasonRepackFailed:        "RepackFailed",
		vocabulary.ReasonForeignCSR:          "ForeignCSR",
		vocabulary.ReasonCSRFailed:           "CSRFailed",
		vocabulary.ReasonCertificateRejected: "CertificateRejected",
		vocabulary.ReasonOverrideConsumed:    "OverrideConsumed",
		vocabulary.ReasonOverrideUnused:      "OverrideUnused",
		vocabulary.ReasonModeChanged:         "ModeChanged",
		vocabulary.ReasonModeSwitched:        "ModeSwitched",
		vocabulary.ReasonPullRequest:         "PullRequest",
		vocabulary.ReasonPullRequestFailed:   "PullRequestFailed",
		vocabulary.ReasonRekeyed:             "Rekeyed",
		vocabulary.ReasonTermsFailed:         "TermsFailed",
		vocabulary.CSRApprovedReason:         "GitpeerApproved",
		vocabulary.CSRSignTestReason:         "GitpeerCheck",

		vocabulary.RecordsSecretPrefix: "gitpeer-records-",
		vocabulary.IssuedSecretPrefix:  "gitpeer-issued-",
	} {
		if got != want {
			t.Errorf("name %q, want %q", got, want)
		}
	}
}

// TestRecordsFormat pins how the records of a consumer are stored: agents
// and `gitpeer records` of every version decode this JSON (where they are
// stored: TestRecordsSecretName).
func TestRecordsFormat(t *testing.T) {
	revoked := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	records := vocabulary.ConsumerRecords{PinnedKey: "ab", Certificates: []vocabulary.IssuedRecord{
		{Serial: "2a", NotAfter: revoked.Add(time.Hour), RevokedAt: &revoked},
	}}
	secret := &corev1.Secret{}
	if err := vocabulary.SetRecords(secret, "uid", "consumer-1", records); err != nil {
		t.Fatal(err)
	}
	want := `{"pinnedKey":"ab","certificates":[{"serial":"2a","notAfter":"2030-01-02T04:04:05Z","revokedAt":"2030-01-02T03:04:05Z"}]}`
	if got := string(secret.Data["consumer-1"]); got != want {
		t.Errorf("records JSON %s, want %s", got, want)
	}
	if secret.Labels[vocabulary.ManagedByLabel] != vocabulary.ManagedBy || secret.Labels[vocabulary.OwnerLabel] != "uid" {
		t.Errorf("records Secret labels %v", secret.Labels)
	}
	got, err := vocabulary.DecodeRecords(secret, "consumer-1")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("decoded records %s, want %s", b, want)
	}
	secret.Data["consumer-2"] = []byte("{")
	if _, err := vocabulary.DecodeRecords(secret, "consumer-2"); err == nil {
		t.Error("a corrupt record decodes")
	}
}
