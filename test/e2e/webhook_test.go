package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/webhook"
)

// webhookToken is the shared secret of the Git host's webhooks in this file.
const webhookToken = "e2e-webhook-token"

// The handshake is measured twice, from resuming the two PeeringRepositories
// (their agents already running) to the consumer's kubeconfig Secret, with the reviewer merging as soon as the Tenant is
// proposed: once with a ten-minute poll interval and push webhooks (every step
// can only come from a webhook), once polling every pollInterval without them.
const (
	longInterval = 10 * time.Minute
	pollInterval = 10 * time.Second
)

var _ = Describe("Push webhooks", Ordered, func() {
	var host *gitHost
	type run struct {
		name  string
		steps []step
	}
	var runs []run

	BeforeAll(func() { host = startGitHost() })

	It("finish the handshake with a ten-minute poll interval, one webhook per push", func(ctx SpecContext) {
		runs = append(runs, run{"webhook, interval 10m", measureHandshake(ctx, "hook-p", "hook-c", longInterval, host)})
	})

	It("are what makes it fast: the same handshake polling every 10s, without webhooks", func(ctx SpecContext) {
		runs = append(runs, run{"no webhook, interval 10s", measureHandshake(ctx, "poll-p", "poll-c", pollInterval, nil)})
	})

	AfterAll(func() {
		for _, r := range runs {
			var b strings.Builder
			var reviewer time.Duration // from seeing a proposal to the end of the merge's push
			for i, s := range r.steps {
				fmt.Fprintf(&b, "  %-28s %6.2fs\n", s.name, s.at.Seconds())
				if strings.HasPrefix(s.name, reviewerMerged) {
					reviewer += s.at - r.steps[i-1].at
				}
			}
			// The reviewer's share is the Git CLI's clone, merge and push, with the webhooks
			// its push delivers; the rest is the agents' (and the deliveries of their pushes).
			fmt.Fprintf(&b, "  %-28s %6.2fs\n", "agents (total - reviewer)", (r.steps[len(r.steps)-1].at - reviewer).Seconds())
			AddReportEntry("handshake time, "+r.name, b.String())
		}
	})
})

// reviewerMerged names the steps that end with the reviewer's merge.
const reviewerMerged = "reviewer merged"

// step is a handshake milestone and when it was seen, after the PeeringRepositories were resumed.
type step struct {
	name string
	at   time.Duration
}

// measureHandshake runs one handshake between two new clusters and returns when
// each step became visible. With host, each cluster gets a webhook receiver
// that host notifies of every push.
func measureHandshake(ctx context.Context, pid, cid authv1beta1.ClusterID, interval time.Duration, host *gitHost) []step {
	provider, consumer := newCluster(string(pid)), newCluster(string(cid))
	// Both start suspended, so that the agents and their webhook receivers are
	// up before the first step; resuming them starts the clock.
	provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
		s.Suspend, s.Interval = true, &metav1.Duration{Duration: interval}
		s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
	})
	consumer.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
		s.Suspend, s.Interval = true, &metav1.Duration{Duration: interval}
		s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{pid}, TrustedCAs: anchors(provider)}
	})
	provider.startAgent()
	consumer.startAgent()
	if host != nil {
		provider.receiveWebhooks(ctx, host)
		consumer.receiveWebhooks(ctx, host)
	}

	dir := string(pid) + "/" + string(cid) + "/"
	review := "gitpeer/" + dir[:len(dir)-1]
	began := time.Now()
	var steps []step
	seen := func(name string, cond func() bool) {
		GinkgoHelper()
		Eventually(cond).WithTimeout(2*time.Minute).WithPolling(20*time.Millisecond).Should(BeTrue(), name)
		steps = append(steps, step{name, time.Since(began)})
	}
	provider.resume(ctx)
	consumer.resume(ctx)
	seen("request.yaml proposed", func() bool { return show(review, dir+"request.yaml") != "" })
	reviewerMerges(repo, review, "Merge pull request from "+review+" (request)")
	steps = append(steps, step{reviewerMerged + " the request", time.Since(began)})
	seen("nonce.yaml on main", func() bool { return show("main", dir+"nonce.yaml") != "" })
	seen("tenant.yaml proposed", func() bool { return show(review, dir+"tenant.yaml") != "" })
	w := filepath.Join(GinkgoT().TempDir(), "w")
	gitCLI(filepath.Dir(w), "clone", "-q", repo.Dir, w)
	gitCLI(w, "merge", "-q", "--no-ff", "origin/"+review, "-m", "Merge pull request from "+review)
	gitCLI(w, "push", "-q", "origin", "HEAD:main")
	steps = append(steps, step{reviewerMerged, time.Since(began)})
	seen("identity.yaml on main", func() bool { return show("main", dir+"identity.yaml") != "" })
	secret := client.ObjectKey{
		Namespace: authv1beta1.TenantNamespaceName(pid),
		Name:      authv1beta1.KubeconfigSecretName(authv1beta1.ControlPlaneIdentityName(pid)),
	}
	seen("consumer kubeconfig Secret", func() bool { return consumer.k8s.Get(ctx, secret, &corev1.Secret{}) == nil })
	GinkgoWriter.Printf("handshake %s/%s with interval %s, webhooks %v: %v\n", pid, cid, interval, host != nil, steps)
	return steps
}

// receiveWebhooks opts the cluster's PeeringRepository in to GitHub push
// webhooks and, once its agent's receiver accepts the Git host's signature,
// registers the receiver with the Git host.
func (c *cluster) receiveWebhooks(ctx context.Context, host *gitHost) {
	GinkgoHelper()
	Expect(c.k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "webhook"},
		Data:       map[string][]byte{webhook.TokenKey: []byte(webhookToken)},
	})).To(Succeed())
	patch := client.MergeFrom(c.object.DeepCopy())
	c.object.SetAnnotations(map[string]string{gitpeerv1alpha1.WebhookSecretAnnotation: "webhook", gitpeerv1alpha1.WebhookTypeAnnotation: string(webhook.GitHub)})
	Expect(c.k8s.Patch(ctx, c.object, patch)).To(Succeed())
	url := c.sb.WebhookURL(c.object.Name)
	// A signed ping is authenticated and ignored (200) once the receiver knows the token; the
	// receiver serves once the agent's informers have synced (~1 s on a new control plane).
	Eventually(func() int { return host.deliver(url, "ping", []byte(`{"zen":"ready"}`)) }).
		WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(http.StatusOK))
	DeferCleanup(host.register(url))
}

// resume lifts spec.suspend of the cluster's PeeringRepository.
func (c *cluster) resume(ctx context.Context) {
	GinkgoHelper()
	patch := client.MergeFrom(c.object.DeepCopy())
	c.object.Spec.Suspend = false
	Expect(c.k8s.Patch(ctx, c.object, patch)).To(Succeed())
}

// gitHost plays a Git host's webhook deliveries: a post-receive hook in the
// served bare repository posts the pushed refs to it, and it sends a
// GitHub-signed push event per ref to every registered receiver.
type gitHost struct {
	mu      sync.Mutex
	targets []string
}

func startGitHost() *gitHost {
	GinkgoHelper()
	h := &gitHost{}
	srv := httptest.NewServer(http.HandlerFunc(h.receivePack))
	DeferCleanup(srv.Close)
	hook := filepath.Join(repo.Dir, "hooks", "post-receive")
	Expect(os.MkdirAll(filepath.Dir(hook), 0o755)).To(Succeed())
	script := "#!/bin/sh\nexec curl -s -m 10 -o /dev/null --data-binary @- " + srv.URL + "\n"
	Expect(os.WriteFile(hook, []byte(script), 0o755)).To(Succeed())
	DeferCleanup(os.Remove, hook)
	return h
}

// register adds a webhook target until the returned function is called.
func (h *gitHost) register(url string) (unregister func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.targets = append(h.targets, url)
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.targets = slices.DeleteFunc(h.targets, func(t string) bool { return t == url })
	}
}

// receivePack reads post-receive's "<old> <new> <ref>" lines and delivers.
func (h *gitHost) receivePack(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	targets := append([]string(nil), h.targets...)
	h.mu.Unlock()
	lines := bufio.NewScanner(r.Body)
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) != 3 {
			continue
		}
		body, _ := json.Marshal(map[string]string{"before": f[0], "after": f[1], "ref": f[2]})
		for _, t := range targets {
			h.deliver(t, "push", body)
		}
	}
}

// deliver sends one signed event and returns the status, 0 if none. A failed
// delivery is only logged: as with a real Git host, the agent then waits for
// its next poll.
func (h *gitHost) deliver(url, event string, body []byte) int {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-Hub-Signature-256", "sha256="+webhook.Signature([]byte(webhookToken), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		GinkgoWriter.Printf("webhook delivery to %s: %v\n", url, err)
		return 0
	}
	resp.Body.Close()
	GinkgoWriter.Printf("webhook delivery to %s: %s\n", url, resp.Status)
	return resp.StatusCode
}
