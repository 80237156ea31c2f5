package crd_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/config/crd"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/crdinstall"
)

// TestOnAPIServer installs the CRDs on a real kube-apiserver (from `make tools`) and checks that
// they are accepted (CEL rules compile and fit the cost budget), that the defaults apply, that the
// validation rules reject what they must, and that Liqo's own Tenant and Identity apply unchanged.
func TestOnAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := controlplane.Start(t)

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		apiextensionsv1.AddToScheme, corev1.AddToScheme, authv1beta1.AddToScheme, gitpeerv1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	crds, err := crd.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range crds {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create CRD %s: %v", o.Name, err)
		}
	}
	for _, o := range crds {
		if err := crdinstall.WaitEstablished(ctx, c, o.Name); err != nil {
			t.Fatal(err)
		}
	}
	// The REST mapping of a new CRD may take a moment to reach the client's discovery.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-cl-consumer"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	create := func(obj client.Object) error {
		var err error
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			err = c.Create(ctx, obj)
			return err == nil || !strings.Contains(err.Error(), "no matches for kind"), nil
		})
		return err
	}

	t.Run("PeeringRepository defaults", func(t *testing.T) {
		pr := &gitpeerv1alpha1.PeeringRepository{
			ObjectMeta: metav1.ObjectMeta{Name: "minimal", Namespace: ns.Name},
			Spec: gitpeerv1alpha1.PeeringRepositorySpec{
				URL:       "ssh://git@git.example.com/peering.git",
				ClusterID: "cl-provider",
				Provider:  &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: "https://203.0.113.10:6443"},
				Consumer:  &gitpeerv1alpha1.ConsumerSpec{},
				Verify:    &gitpeerv1alpha1.VerifySpec{SecretRef: metaRef("keys")},
			},
		}
		if err := create(pr); err != nil {
			t.Fatal(err)
		}
		s := pr.Spec
		if s.Branch != "main" || s.Interval == nil || s.Interval.Duration != time.Minute || s.Timeout == nil || s.Timeout.Duration != time.Minute ||
			s.Provider.CertificateTTL == nil || s.Provider.CertificateTTL.Duration != 24*time.Hour ||
			s.Provider.DeletionPolicy != gitpeerv1alpha1.DeletionRevoke || s.Provider.MaxPendingRequests == nil || *s.Provider.MaxPendingRequests != 100 ||
			s.Provider.ClusterRoleName != "liqo-remote-controlplane" ||
			s.Consumer.ReviewBranchTemplate != "gitpeer/{{.ProviderID}}/{{.ConsumerID}}" ||
			s.Verify.Mode != gitpeerv1alpha1.VerifyRelevant {
			t.Errorf("defaults not applied: %+v provider %+v consumer %+v verify %+v", s, s.Provider, s.Consumer, s.Verify)
		}
		if pr.Status.ObservedGeneration != -1 {
			t.Errorf("status.observedGeneration %d, want -1", pr.Status.ObservedGeneration)
		}

		pr.Spec.ClusterID = "cl-other"
		if err := c.Update(ctx, pr); err == nil || !strings.Contains(err.Error(), "clusterID is immutable") {
			t.Errorf("clusterID update: %v", err)
		}
	})

	t.Run("PeeringRepository validation", func(t *testing.T) {
		valid := func() *gitpeerv1alpha1.PeeringRepository {
			return &gitpeerv1alpha1.PeeringRepository{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-", Namespace: ns.Name},
				Spec: gitpeerv1alpha1.PeeringRepositorySpec{
					URL:       "https://git.example.com/peering.git",
					ClusterID: "cl-consumer",
					Consumer:  &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"cl-provider"}},
				},
			}
		}
		if err := create(valid()); err != nil {
			t.Fatalf("valid consumer-only repository rejected: %v", err)
		}
		const caHash = "sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3"
		anchored := valid()
		anchored.Spec.Consumer.TrustedCAs = []gitpeerv1alpha1.TrustedCA{{Provider: "cl-provider", CACertHashes: []string{caHash}}}
		anchored.Spec.Consumer.TrustOnFirstUse = true
		if err := create(anchored); err != nil {
			t.Fatalf("consumer anchored by a CA hash rejected: %v", err)
		}
		dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
		for name, tc := range map[string]struct {
			mutate func(*gitpeerv1alpha1.PeeringRepository)
			want   string
		}{
			"cluster ID not a label": {func(p *gitpeerv1alpha1.PeeringRepository) { p.Spec.ClusterID = "Bad_ID" }, "spec.clusterID"},
			"cluster ID too long": {func(p *gitpeerv1alpha1.PeeringRepository) {
				p.Spec.ClusterID = authv1beta1.ClusterID(strings.Repeat("a", 64))
			}, "at most 63"},
			"provider ID too long": {func(p *gitpeerv1alpha1.PeeringRepository) {
				p.Spec.Consumer.Providers = []authv1beta1.ClusterID{authv1beta1.ClusterID(strings.Repeat("a", 64))}
			}, "at most 63"},
			"no role": {func(p *gitpeerv1alpha1.PeeringRepository) { p.Spec.Consumer = nil }, "enable the provider role"},
			"provider without apiServer": {func(p *gitpeerv1alpha1.PeeringRepository) {
				p.Spec.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true}
			}, "apiServer is required"},
			"short TTL": {func(p *gitpeerv1alpha1.PeeringRepository) {
				p.Spec.Provider = &gitpeerv1alpha1.ProviderSpec{APIServer: "https://x:6443", CertificateTTL: dur(5 * time.Minute)}
			}, "at least 10m"},
			"path escapes":  {func(p *gitpeerv1alpha1.PeeringRepository) { p.Spec.Path = "a/../../etc" }, "must not contain '..'"},
			"absolute path": {func(p *gitpeerv1alpha1.PeeringRepository) { p.Spec.Path = "/etc" }, "must be relative"},
			"url scheme":    {func(p *gitpeerv1alpha1.PeeringRepository) { p.Spec.URL = "file:///srv/repo" }, "spec.url"},
			"verify mode": {func(p *gitpeerv1alpha1.PeeringRepository) {
				p.Spec.Verify = &gitpeerv1alpha1.VerifySpec{Mode: "Some", SecretRef: metaRef("k")}
			}, "spec.verify.mode"},
			"trusted CA with neither hashes nor Secret": {func(p *gitpeerv1alpha1.PeeringRepository) {
				p.Spec.Consumer.TrustedCAs = []gitpeerv1alpha1.TrustedCA{{Provider: "cl-provider"}}
			}, "set exactly one of secretRef and caCertHashes"},
			"trusted CA with both hashes and Secret": {func(p *gitpeerv1alpha1.PeeringRepository) {
				p.Spec.Consumer.TrustedCAs = []gitpeerv1alpha1.TrustedCA{{Provider: "cl-provider", CACertHashes: []string{caHash}, SecretRef: new(metaRef("ca"))}}
			}, "set exactly one of secretRef and caCertHashes"},
			"CA hash not kubeadm's format": {func(p *gitpeerv1alpha1.PeeringRepository) {
				p.Spec.Consumer.TrustedCAs = []gitpeerv1alpha1.TrustedCA{{Provider: "cl-provider", CACertHashes: []string{strings.TrimPrefix(caHash, "sha256:")}}}
			}, "caCertHashes"},
		} {
			p := valid()
			tc.mutate(p)
			if err := create(p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
			}
		}
	})

	t.Run("Liqo Tenant and Identity apply unchanged", func(t *testing.T) {
		var tn authv1beta1.Tenant
		readYAML(t, "../../apis/authentication/v1beta1/testdata/liqo-docs-tenant.yaml", &tn)
		want := tn.Spec.DeepCopy()
		tn.Namespace = ns.Name
		if err := create(&tn); err != nil {
			t.Fatal(err)
		}
		if tn.Spec.TenantCondition != authv1beta1.TenantConditionActive ||
			authv1beta1.GetAuthzPolicyValue(tn.Spec.AuthzPolicy) != authv1beta1.KeysExchange || tn.Spec.AuthzPolicy == nil {
			t.Errorf("Tenant defaults: %+v", tn.Spec)
		}
		if !bytes.Equal(tn.Spec.CSR, want.CSR) || !bytes.Equal(tn.Spec.PublicKey, want.PublicKey) ||
			!bytes.Equal(tn.Spec.Signature, want.Signature) || tn.Spec.ClusterID != want.ClusterID {
			t.Error("Tenant spec changed by the API server")
		}
		tn.Spec.TenantCondition = "Paused"
		if err := c.Update(ctx, &tn); err == nil {
			t.Error("tenantCondition Paused accepted")
		}

		var id authv1beta1.Identity
		readYAML(t, "../../apis/authentication/v1beta1/testdata/liqo-docs-identity.yaml", &id)
		id.Namespace = ns.Name
		if err := create(&id); err != nil {
			t.Fatal(err)
		}
		id.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: authv1beta1.KubeconfigSecretName(id.Name)}
		if err := c.Status().Update(ctx, &id); err != nil {
			t.Fatal(err)
		}
		got := &authv1beta1.Identity{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(&id), got); err != nil {
			t.Fatal(err)
		}
		if got.Status.KubeconfigSecretRef == nil || got.Status.KubeconfigSecretRef.Name != "kubeconfig-controlplane-cl-provider" ||
			!bytes.Equal(got.Spec.AuthParams.SignedCRT, id.Spec.AuthParams.SignedCRT) {
			t.Errorf("Identity: %+v", got)
		}
	})
}

func readYAML(t *testing.T, file string, obj any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatal(err)
	}
}
