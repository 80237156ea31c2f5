package installed_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/installed"
	"github.com/gitpeer/gitpeer/test/sandbox"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const (
	systemNamespace = sandbox.AgentNamespace
	serviceAccount  = "gitpeer-agent"
	// idA provides for idB, which consumes in direct mode; idB provides for idA, which consumes
	// through a reviewed pull request. Each agent thus runs both roles.
	idA = "installed-a"
	idB = "installed-b"
)

// permissionError matches what the agent logs when RBAC or the admission policy refuses a call.
var permissionError = regexp.MustCompile(`(?i)forbidden|denied`)

// node is one control plane with config/default installed and the real agent running as the
// installed ServiceAccount.
type node struct {
	id    string
	cp    *controlplane.ControlPlane
	admin client.Client
	// agentConfig authenticates as the agent's ServiceAccount, with the agent's kubeconfig.
	agentConfig *rest.Config
	agent       *installed.Agent
	object      *gitpeerv1alpha1.PeeringRepository
}

// installNode starts a control plane, applies objs, stores the Git credentials and a
// PeeringRepository as an admin would, and starts the agent binary as the ServiceAccount with
// the Deployment's arguments (addresses disabled, local data directory).
func installNode(ctx context.Context, id string, objs []*unstructured.Unstructured, mutate func(*node, *gitpeerv1alpha1.PeeringRepositorySpec)) *node {
	GinkgoHelper()
	n := &node{id: id, cp: controlplane.Start(GinkgoT())}
	var err error
	n.admin, err = client.New(n.cp.Config, client.Options{Scheme: sandbox.Scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(installed.Apply(ctx, n.admin, objs)).To(Succeed())
	Expect(n.admin.Create(ctx, sandbox.GitCredentials(gitSrv))).To(Succeed())
	sb := &sandbox.Cluster{ID: id, CP: n.cp, Client: n.admin}
	n.object, err = sb.Apply(ctx, repo.SSHURL, time.Second, func(s *gitpeerv1alpha1.PeeringRepositorySpec) { mutate(n, s) })
	Expect(err).NotTo(HaveOccurred())

	dir := GinkgoT().TempDir()
	kubeconfig := filepath.Join(dir, "agent.kubeconfig")
	Expect(installed.ServiceAccountKubeconfig(ctx, n.cp.Config, systemNamespace, serviceAccount, kubeconfig)).To(Succeed())
	n.agentConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	dep, err := installed.Deployment(objs, "gitpeer-agent")
	Expect(err).NotTo(HaveOccurred())
	args := installed.AgentArgs(dep, map[string]string{"RUNTIME_NAMESPACE": systemNamespace}, map[string]string{
		"--kubeconfig": kubeconfig, "--data-dir": filepath.Join(dir, "data"),
		"--metrics-addr": "0", "--health-addr": "0", "--webhook-addr": "0",
	})
	Expect(args).To(ContainElements("agent", "--watch-namespace="+systemNamespace, "--enable-leader-election"))
	n.agent, err = installed.StartAgent(binary, args, dir, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	nodes = append(nodes, n)
	DeferCleanup(func() {
		nodes = nil
		Expect(n.agent.Stop(30 * time.Second)).To(Succeed())
	})
	return n
}

// anchor is spec.consumer.trustedCAs anchoring provider by the hash of its
// API server's CA, the CA its agent puts in Identities.
func anchor(provider *node) []gitpeerv1alpha1.TrustedCA {
	GinkgoHelper()
	hashes, err := crypto.CACertHashes(provider.cp.ServingCAPEM)
	Expect(err).NotTo(HaveOccurred())
	return []gitpeerv1alpha1.TrustedCA{{Provider: authv1beta1.ClusterID(provider.id), CACertHashes: hashes}}
}

// kubeconfigFrom returns the kubeconfig the consumer n built for provider, once it exists.
func (n *node) kubeconfigFrom(ctx context.Context, provider string) []byte {
	GinkgoHelper()
	secret := &corev1.Secret{}
	until(2*time.Minute, func(g Gomega) { g.Expect(n.admin.Get(ctx, kubeconfigKey(provider), secret)).To(Succeed()) })
	return secret.Data[authv1beta1.KubeconfigSecretField]
}

// kubeconfigKey names the Secret in which a consumer keeps its kubeconfig for provider.
func kubeconfigKey(provider string) client.ObjectKey {
	id := authv1beta1.ClusterID(provider)
	return client.ObjectKey{
		Namespace: authv1beta1.TenantNamespaceName(id),
		Name:      authv1beta1.KubeconfigSecretName(authv1beta1.ControlPlaneIdentityName(id)),
	}
}

// annotate sets an annotation on n's PeeringRepository, as an admin would.
func (n *node) annotate(ctx context.Context, key, value string) {
	GinkgoHelper()
	obj := &gitpeerv1alpha1.PeeringRepository{}
	Expect(n.admin.Get(ctx, client.ObjectKeyFromObject(n.object), obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopy())
	metav1.SetMetaDataAnnotation(&obj.ObjectMeta, key, value)
	Expect(n.admin.Patch(ctx, obj, patch)).To(Succeed())
}

// mayCreateResourceSlices asks, as the kubeconfig's user, whether it may create Liqo
// ResourceSlices in namespace (what the tenant role grants).
func mayCreateResourceSlices(ctx context.Context, kubeconfig []byte, namespace string) bool {
	GinkgoHelper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "create", Group: "authentication.liqo.io", Resource: "resourceslices", Namespace: namespace,
		}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return review.Status.Allowed
}

// clientCert returns a kubeconfig's client certificate.
func clientCert(g Gomega, kubeconfig []byte) *x509.Certificate {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	block, _ := pem.Decode(cfg.CertData)
	g.Expect(block).NotTo(BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	return cert
}

var _ = describeInstalled("config/default", func() ([]*unstructured.Unstructured, error) {
	return installed.Render("../../config/default")
})

var _ = describeInstalled("the Helm chart", func() ([]*unstructured.Unstructured, error) {
	helm := os.Getenv("GITPEER_HELM")
	if helm == "" {
		found, _ := filepath.Glob("../../.cache/helm/helm-*")
		if len(found) != 1 {
			return nil, errors.New("no helm binary: set GITPEER_HELM, or run `make helm-lint` (make test does)")
		}
		helm = found[0]
	}
	// The control planes run the Kubernetes version the tools module pins.
	gomod, err := os.ReadFile("../tools/go.mod")
	if err != nil {
		return nil, err
	}
	kube := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(gomod)
	if kube == nil {
		return nil, errors.New("no k8s.io/kubernetes version in test/tools/go.mod")
	}
	return installed.RenderChart(helm, "../../charts/gitpeer", systemNamespace, string(kube[1]))
})

// describeInstalled declares the specs for one way of installing gitpeer, whose objects render
// returns: the real gitpeer binary, installed on two control planes and confined by nothing but the
// installed RBAC and admission policy, peers both ways, revokes and re-issues; any call the
// installation does not permit shows up in its logs and fails the spec. Another install method
// (a Helm chart's rendered objects) is one more call.
func describeInstalled(name string, render func() ([]*unstructured.Unstructured, error)) bool {
	return Describe("Installed with "+name, Ordered, func() {
		var a, b *node
		var objs []*unstructured.Unstructured
		var revokedSerial string       // of idB's certificate on idA
		var firstOfA *x509.Certificate // idA's first certificate on idB

		BeforeAll(func(ctx SpecContext) {
			newRepo()
			var err error
			objs, err = render()
			Expect(err).NotTo(HaveOccurred())
			a = installNode(ctx, idA, objs, func(n *node, s *gitpeerv1alpha1.PeeringRepositorySpec) {
				s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: n.cp.URL}
				s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{idB}}
			})
			b = installNode(ctx, idB, objs, func(n *node, s *gitpeerv1alpha1.PeeringRepositorySpec) {
				// The shortest lifetime Kubernetes signs: with the signer's 5-minute backdating,
				// renewal comes ~5 minutes after issuance.
				s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: n.cp.URL,
					CertificateTTL: &metav1.Duration{Duration: gitpeerv1alpha1.MinCertificateTTL}}
				s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{idA}, Direct: true, TrustedCAs: anchor(a)}
			})
			// a's admin anchors b once b's CA exists, as b's admin gives its hash.
			obj := a.object.DeepCopy()
			patch := client.MergeFrom(a.object)
			obj.Spec.Consumer.TrustedCAs = anchor(b)
			Expect(a.admin.Patch(ctx, obj, patch)).To(Succeed())
		})

		// Checked after every spec: the agents are still running and were never refused anything.
		AfterEach(func() {
			for _, n := range nodes {
				done, err := n.agent.Exited()
				Expect(done).To(BeFalse(), "the agent of %s exited: %v", n.id, err)
				Expect(refusals(n.agent.Logs())).To(BeEmpty(), "the agent of %s was refused a call", n.id)
			}
		})

		It("peers both ways: nonce, reviewed and direct Tenants, identities, working kubeconfigs", func(ctx SpecContext) {
			// idA consumes from idB through review: the reviewer merges its request, then its Tenant.
			reviewRef := "gitpeer/" + idB + "/" + idA
			until(2*time.Minute, func(g Gomega) { g.Expect(show(reviewRef, idB+"/"+idA+"/request.yaml")).NotTo(BeEmpty()) })
			commitAsReviewer([]string{"merge", "-q", "--no-ff", "origin/" + reviewRef, "-m", "Merge the request from " + reviewRef})
			until(2*time.Minute, func(g Gomega) { g.Expect(show(reviewRef, idB+"/"+idA+"/tenant.yaml")).NotTo(BeEmpty()) })
			commitAsReviewer([]string{"merge", "-q", "--no-ff", "origin/" + reviewRef, "-m", "Merge pull request #1 from " + reviewRef})

			for _, p := range []struct {
				provider, consumer *node
			}{{a, b}, {b, a}} {
				dir := p.provider.id + "/" + p.consumer.id + "/"
				until(2*time.Minute, func(g Gomega) { g.Expect(show("main", dir+"identity.yaml")).NotTo(BeEmpty(), dir) })
				kubeconfig := p.consumer.kubeconfigFrom(ctx, p.provider.id)
				user, err := whoami.Kubeconfig(ctx, kubeconfig)
				Expect(err).NotTo(HaveOccurred())
				Expect(user).To(Equal(p.consumer.id))
				tenantNS := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(p.consumer.id))
				Expect(mayCreateResourceSlices(ctx, kubeconfig, tenantNS)).To(BeTrue(), "the tenant role is bound")
				Expect(p.provider.admin.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: p.consumer.id}, &authv1beta1.Tenant{})).To(Succeed())
				Expect(p.provider.admin.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: authv1beta1.RoleBindingName(gitpeerv1alpha1.DefaultClusterRoleName)}, &rbacv1.RoleBinding{})).To(Succeed())
				// The agent's events were recorded (the recorder only logs its failures).
				until(30*time.Second, func(g Gomega) {
					events := &eventsv1.EventList{}
					g.Expect(p.provider.admin.List(ctx, events, client.InNamespace(systemNamespace))).To(Succeed())
					g.Expect(events.Items).To(ContainElement(HaveField("Reason", gitpeerv1alpha1.IdentityIssuedReason)))
				})
			}
			firstOfA = clientCert(Default, a.kubeconfigFrom(ctx, idB))
		})

		It("revokes when tenant.yaml is deleted: Tenant, RoleBinding, identity.yaml and the consumer's kubeconfig go", func(ctx SpecContext) {
			dir := idA + "/" + idB + "/"
			tenantNS := authv1beta1.TenantNamespaceName(idB)
			kubeconfig := b.kubeconfigFrom(ctx, idA)
			revokedSerial = clientCert(Default, kubeconfig).SerialNumber.Text(16)
			commitAsReviewer([]string{"rm", "-q", dir + "tenant.yaml"}, []string{"commit", "-q", "-m", "Revoke " + idB})

			until(time.Minute, func(g Gomega) {
				g.Expect(show("main", dir+"identity.yaml")).To(BeEmpty())
				g.Expect(a.admin.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: idB}, &authv1beta1.Tenant{})).To(Satisfy(apierrors.IsNotFound))
				g.Expect(a.admin.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: authv1beta1.RoleBindingName(gitpeerv1alpha1.DefaultClusterRoleName)}, &rbacv1.RoleBinding{})).
					To(Satisfy(apierrors.IsNotFound))
				g.Expect(b.admin.Get(ctx, kubeconfigKey(idA), &corev1.Secret{})).To(Satisfy(apierrors.IsNotFound))
			})
			until(10*time.Second, func(g Gomega) { // the authorizer's informers follow the deletion
				g.Expect(mayCreateResourceSlices(ctx, kubeconfig, tenantNS)).To(BeFalse(), "the tenant role is unbound")
			})
			records := &corev1.Secret{}
			Expect(a.admin.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: vocabulary.RecordsSecretName(a.object.Name, idB)}, records)).To(Succeed())
			Expect(records.Data).NotTo(BeEmpty())
			Expect(string(records.Data[idB])).To(ContainSubstring(`"revokedAt"`))
			// Only the agent writes them (policy gitpeer-records): a cluster admin cannot erase the revocation.
			delete(records.Data, idB)
			expectForbidden(a.admin.Update(ctx, records, client.DryRunAll), "a cluster admin erases the records of "+idB)
			// The certificate still authenticates (it cannot be revoked), which is why the provider
			// refuses to bind it again by default.
			user, err := whoami.Kubeconfig(ctx, kubeconfig)
			Expect(err).NotTo(HaveOccurred())
			Expect(user).To(Equal(idB))
		})

		// Renewal signs a new CSR for an issued Tenant, patches the Tenant's status, updates the records
		// Secret and commits identity.yaml again. With the shortest TTL Kubernetes accepts (10m, renewed
		// after 2/3) waiting for it would take minutes; re-issuing the revoked consumer makes the same
		// calls on a records Secret and a tenant namespace that already exist.
		It("issues the revoked consumer a new certificate when both admins ask for it", func(ctx SpecContext) {
			b.annotate(ctx, gitpeerv1alpha1.RequestAgainAnnotation, idA)
			a.annotate(ctx, gitpeerv1alpha1.RevivalAnnotationPrefix+idB, gitpeerv1alpha1.AcceptRevivalValue)
			until(2*time.Minute, func(g Gomega) { g.Expect(show("main", idA+"/"+idB+"/identity.yaml")).NotTo(BeEmpty()) })
			var kubeconfig []byte
			until(time.Minute, func(g Gomega) {
				secret := &corev1.Secret{}
				g.Expect(b.admin.Get(ctx, kubeconfigKey(idA), secret)).To(Succeed())
				kubeconfig = secret.Data[authv1beta1.KubeconfigSecretField]
				g.Expect(clientCert(g, kubeconfig).SerialNumber.Text(16)).NotTo(Equal(revokedSerial))
			})
			user, err := whoami.Kubeconfig(ctx, kubeconfig)
			Expect(err).NotTo(HaveOccurred())
			Expect(user).To(Equal(idB))
		})

		It("denies the ServiceAccount what the agent must not do", func(ctx SpecContext) {
			agent := kubernetes.NewForConfigOrDie(a.agentConfig)
			dryRun := []string{metav1.DryRunAll}
			_, err := agent.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			expectForbidden(err, "list Secrets cluster-wide")
			_, err = agent.CoreV1().Secrets(authv1beta1.TenantNamespaceName(idB)).List(ctx, metav1.ListOptions{})
			expectForbidden(err, "list Secrets in a tenant namespace")

			// CSRs the agent did not request, labelled as if it had: another signer's, and one of its
			// own signer requested by another user (the admin).
			labels := map[string]string{"app.kubernetes.io/managed-by": "gitpeer", "gitpeer.io/consumer": "x", "gitpeer.io/owner": string(a.object.UID)}
			for _, signer := range []string{certificatesv1.KubeletServingSignerName, certificatesv1.KubeAPIServerClientSignerName} {
				csr := &certificatesv1.CertificateSigningRequest{
					ObjectMeta: metav1.ObjectMeta{GenerateName: "not-the-agents-", Labels: labels},
					Spec: certificatesv1.CertificateSigningRequestSpec{
						Request: newCSR("system:node:x"), SignerName: signer,
						Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
					},
				}
				if signer == certificatesv1.KubeAPIServerClientSignerName {
					csr.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
				}
				Expect(a.admin.Create(ctx, csr)).To(Succeed())
				csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
					Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by the agent",
				})
				_, err = agent.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{DryRun: dryRun})
				expectForbidden(err, "approve "+signer+" CSR "+csr.Name+" requested by the admin")
			}

			_, err = agent.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "liqo-nonce"}}, metav1.CreateOptions{DryRun: dryRun})
			expectForbidden(err, "create a Secret outside liqo-tenant-* namespaces")
			_, err = agent.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.RoleBindingName(gitpeerv1alpha1.DefaultClusterRoleName)},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: gitpeerv1alpha1.DefaultClusterRoleName},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "default"}},
			}, metav1.CreateOptions{DryRun: dryRun})
			expectForbidden(err, "create a RoleBinding outside liqo-tenant-* namespaces")
		})

		It("admits the Deployment's Pod under the restricted Pod Security level", func(ctx SpecContext) {
			dep, err := installed.Deployment(objs, "gitpeer-agent")
			Expect(err).NotTo(HaveOccurred())
			const ns = "restricted"
			Expect(a.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
				"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
				"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/warn-version": "latest",
			}}})).To(Succeed())
			Expect(a.admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep.Spec.Template.Spec.ServiceAccountName}})).To(Succeed())
			cfg := rest.CopyConfig(a.cp.Config)
			warnings := &warningRecorder{}
			cfg.WarningHandler = warnings
			admin := kubernetes.NewForConfigOrDie(cfg)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: dep.Name + "-", Labels: dep.Spec.Template.Labels},
				Spec:       dep.Spec.Template.Spec,
			}
			_, err = admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			Expect(err).NotTo(HaveOccurred(), "the agent's Pod is not admitted")
			Expect(warnings.texts).To(BeEmpty())
			// Control: the namespace enforces the level.
			root := pod.DeepCopy()
			root.Spec.SecurityContext, root.Spec.Containers[0].SecurityContext = nil, nil
			_, err = admin.CoreV1().Pods(ns).Create(ctx, root, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			expectForbidden(err, "create a Pod without security context")
		})

		// Last, as it waits for the renewal time of idA's first certificate on idB (~5 minutes).
		It("renews a certificate before it expires, without a new approval", func(ctx SpecContext) {
			var kubeconfig []byte
			until(time.Until(firstOfA.NotAfter), func(g Gomega) {
				secret := &corev1.Secret{}
				g.Expect(a.admin.Get(ctx, kubeconfigKey(idB), secret)).To(Succeed())
				kubeconfig = secret.Data[authv1beta1.KubeconfigSecretField]
				g.Expect(clientCert(g, kubeconfig).SerialNumber).NotTo(Equal(firstOfA.SerialNumber))
			})
			Expect(time.Now()).To(BeTemporally("<", firstOfA.NotAfter))
			user, err := whoami.Kubeconfig(ctx, kubeconfig)
			Expect(err).NotTo(HaveOccurred())
			Expect(user).To(Equal(idA))
			until(30*time.Second, func(g Gomega) {
				events := &eventsv1.EventList{}
				g.Expect(b.admin.List(ctx, events, client.InNamespace(systemNamespace))).To(Succeed())
				g.Expect(events.Items).To(ContainElement(HaveField("Reason", gitpeerv1alpha1.IdentityRenewedReason)))
			})
		})
	})
}

// expectForbidden fails unless err is the API server's Forbidden (RBAC or admission).
func expectForbidden(err error, what string) {
	GinkgoHelper()
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", what, err)
}

// warningRecorder keeps the warnings the API server returns.
type warningRecorder struct{ texts []string }

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.texts = append(w.texts, text)
}

// nodes are the installed control planes of the running spec.
var nodes []*node

// until polls check until it passes or timeout, like Eventually, and gives up at once when an agent
// was refused a call or has exited.
func until(timeout time.Duration, check func(g Gomega)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, n := range nodes {
			if done, err := n.agent.Exited(); done {
				StopTrying("the agent of " + n.id + " exited").Wrap(err).Now()
			}
			if r := refusals(n.agent.Logs()); r != "" {
				StopTrying("the agent of " + n.id + " was refused a call:\n" + r).Now()
			}
		}
		check(g)
	}).WithTimeout(timeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// refusals returns the log lines with a permission error.
func refusals(logs string) string {
	var out string
	for _, line := range regexp.MustCompile(`(?m)^.*$`).FindAllString(logs, -1) {
		if permissionError.MatchString(line) {
			out += line + "\n"
		}
	}
	return out
}

// newCSR returns a PEM certificate request for cn.
func newCSR(cn string) []byte {
	GinkgoHelper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}
