// Command demo runs gitpeer's whole handshake locally, with real parts: two
// control planes, a Git server and two agents (make demo). It lives outside
// the gitpeer binary, which links no test harness.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/gitserver"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

func main() {
	// A flag set of its own: controller-runtime registers --kubeconfig on the default one.
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	keep := fs.Bool("keep", false, "leave everything running until interrupted and print where to explore")
	gitpeer := fs.String("gitpeer", "bin/gitpeer", "the gitpeer binary (make build) whose audit command reads the repository's history")
	liqoMode := fs.Bool("liqo", false, "run Liqo's authentication module (the liqo-auth-harness, make tools) on both clusters and both agents in Liqo mode")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: go run ./test/demo [--keep] [--liqo] [--gitpeer PATH]

The demo starts a provider and a consumer control plane (kube-apiserver, kube-controller-manager
and etcd built by 'make tools') and a local Git server, runs one gitpeer agent per cluster, and
shows every step of the handshake: request, nonce, Tenant for review, the reviewer's merge,
Identity, a working least-privilege kubeconfig, the audit trail, and revocation. It runs in a
checkout of gitpeer ('make demo'); the agents run in this process, wired as 'gitpeer agent' is.
With --liqo (make demo DEMO_FLAGS=--liqo, which builds Liqo's authentication module from Liqo's
source the first time), Liqo's own authentication controllers run on both clusters and the agents
run in Liqo mode: gitpeer moves the files and gates the approval, Liqo issues the certificate and
writes the kubeconfig.

`)
		fs.PrintDefaults()
	}
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runDemo(ctx, os.Stdout, *gitpeer, *keep, *liqoMode); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

// The demo's clusters.
const (
	demoProvider = "provider"
	demoConsumer = "consumer"
)

// demo is one run of the demo; every step prints a line with its timing.
type demo struct {
	out     io.Writer
	gitpeer string
	dir     string
	began   time.Time
	repo    gitserver.Repo
	cleanup []func()
	liqo    bool // Liqo mode: Liqo's authentication module runs on both clusters
}

// runDemo runs the demo, printing to out; gitpeer is the binary whose audit
// command it runs; with keep, everything stays up until ctx is done; with
// liqoMode, both clusters run Liqo's authentication module and both agents Liqo mode.
func runDemo(ctx context.Context, out io.Writer, gitpeer string, keep, liqoMode bool) (err error) {
	if _, err := exec.LookPath(gitpeer); err != nil {
		return fmt.Errorf("the gitpeer binary (make build): %w", err)
	}
	d := &demo{out: out, gitpeer: gitpeer, began: time.Now(), liqo: liqoMode}
	if d.dir, err = os.MkdirTemp("", "gitpeer-demo-"); err != nil {
		return err
	}
	defer func() {
		for i := len(d.cleanup) - 1; i >= 0; i-- {
			d.cleanup[i]()
		}
		if !keep || err != nil {
			_ = os.RemoveAll(d.dir)
		}
	}()
	fmt.Fprintf(out, "gitpeer demo: Liqo's authentication handshake between two clusters, through Git only\n\n")
	provider, consumer, err := d.setUp(ctx)
	if err != nil {
		return err
	}
	kubeconfig, err := d.handshake(ctx, consumer)
	if err != nil {
		return err
	}
	if err := d.prove(ctx, kubeconfig); err != nil {
		return err
	}
	if d.liqo {
		if err := d.showLiqo(ctx, provider, consumer, kubeconfig); err != nil {
			return err
		}
	}
	if err := d.audit(ctx); err != nil {
		return err
	}
	if err := d.revoke(ctx, consumer, kubeconfig); err != nil {
		return err
	}
	if keep {
		d.explore(provider, consumer)
		<-ctx.Done()
		return nil
	}
	fmt.Fprintf(out, "\nDone in %s. Stopping the agents, the control planes and the Git server.\n", d.elapsed())
	return nil
}

// setUp starts the Git server, both control planes and both agents.
func (d *demo) setUp(ctx context.Context) (provider, consumer *sandbox.Cluster, err error) {
	// The Git server library logs every SSH session through the standard logger.
	gitLog, err := os.Create(filepath.Join(d.dir, "git-server.log"))
	if err != nil {
		return nil, nil, err
	}
	log.SetOutput(gitLog)
	d.cleanup = append(d.cleanup, func() { log.SetOutput(os.Stderr); gitLog.Close() })
	git, err := gitserver.New(filepath.Join(d.dir, "git"))
	if err != nil {
		return nil, nil, err
	}
	d.cleanup = append(d.cleanup, git.Stop)
	if d.repo, err = git.NewRepo("peering"); err != nil {
		return nil, nil, err
	}
	work := filepath.Join(d.dir, "reviewer")
	for _, args := range [][]string{
		{"clone", "-q", d.repo.Dir, work},
		{"-C", work, "commit", "-q", "--allow-empty", "-m", "Peering repository"},
		{"-C", work, "push", "-q", "origin", "HEAD:main"},
	} {
		if _, err := sandbox.Git(d.dir, args...); err != nil {
			return nil, nil, err
		}
	}
	d.step("Git server ready: %s (SSH, host key verified by the agents)", d.repo.SSHURL)

	clusters := map[string]*sandbox.Cluster{}
	for _, id := range []string{demoProvider, demoConsumer} {
		cp, err := controlplane.New(ctx, filepath.Join(d.dir, id))
		if err != nil {
			return nil, nil, fmt.Errorf("%s control plane: %w", id, err)
		}
		d.cleanup = append(d.cleanup, cp.Stop)
		c, err := sandbox.Prepare(ctx, id, cp, git, filepath.Join(d.dir, id, "agent-data"))
		if err != nil {
			return nil, nil, err
		}
		clusters[id] = c
		d.step("%s control plane ready in %s: etcd, kube-apiserver, kube-controller-manager at %s", id, cp.StartupTime.Round(time.Millisecond), cp.URL)
		if d.liqo {
			if err := d.installLiqo(ctx, c); err != nil {
				return nil, nil, err
			}
		}
	}
	provider, consumer = clusters[demoProvider], clusters[demoConsumer]
	if _, err := provider.Apply(ctx, d.repo.SSHURL, time.Second, func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
		s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.CP.URL}
		s.Liqo = d.liqoSpec()
	}); err != nil {
		return nil, nil, err
	}
	// The provider's admin gives the consumer's the hash of its API server's CA, as for kubeadm join.
	caHashes, err := crypto.CACertHashes(provider.CP.ServingCAPEM)
	if err != nil {
		return nil, nil, err
	}
	if _, err := consumer.Apply(ctx, d.repo.SSHURL, time.Second, func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
		s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{demoProvider},
			TrustedCAs: []gitpeerv1alpha1.TrustedCA{{Provider: demoProvider, CACertHashes: caHashes}}}
		s.Liqo = d.liqoSpec()
	}); err != nil {
		return nil, nil, err
	}
	d.step("%q trusts an identity.yaml of %q only for its CA, anchored by hash %s (spec.consumer.trustedCAs)", demoConsumer, demoProvider, caHashes[0])
	for _, c := range []*sandbox.Cluster{provider, consumer} {
		logFile, err := os.Create(filepath.Join(d.dir, c.ID, "agent.log"))
		if err != nil {
			return nil, nil, err
		}
		if err := c.StartAgent(zap.New(zap.WriteTo(logFile))); err != nil {
			return nil, nil, err
		}
		d.cleanup = append(d.cleanup, func() { _ = c.StopAgent(); logFile.Close() })
	}
	d.step("agents running: %q is a provider, %q wants to consume it", demoProvider, demoConsumer)
	return provider, consumer, nil
}

// handshake follows the repository through every step and plays the reviewer.
func (d *demo) handshake(ctx context.Context, consumer *sandbox.Cluster) ([]byte, error) {
	dir := demoProvider + "/" + demoConsumer + "/"
	review := "gitpeer/" + demoProvider + "/" + demoConsumer
	fmt.Fprintln(d.out)
	for _, s := range []struct{ ref, file, who, what string }{
		{review, "request.yaml", "consumer", "requested the peering on branch " + review},
		{"main", "nonce.yaml", "provider", "issued a nonce"},
		{review, "tenant.yaml", "consumer", "signed the nonce and proposed its Tenant on branch " + review},
	} {
		if err := d.waitFile(ctx, s.ref, dir+s.file, true); err != nil {
			return nil, err
		}
		d.step("%-8s %s\n%s  %s", s.who, s.what, strings.Repeat(" ", 10), sandbox.LastCommit(d.repo.Dir, s.ref, dir+s.file))
		if s.file != "request.yaml" {
			continue
		}
		fmt.Fprintf(d.out, "\n  The consumer may push only its review branch. In real life a person merges\n  the request's pull request; the demo merges it now as %q.\n\n", sandbox.ReviewerName)
		if err := d.merge(review, "Merge pull request #1 from "+review); err != nil {
			return nil, err
		}
		d.step("reviewer merged request.yaml into main")
	}
	fmt.Fprintf(d.out, "\n  In real life a person reviews the pull request from %s and merges it;\n  the provider never reads the review branch. The demo merges it now as %q.\n\n", review, sandbox.ReviewerName)
	if err := d.merge(review, "Merge pull request #2 from "+review); err != nil {
		return nil, err
	}
	d.step("reviewer merged tenant.yaml into main")
	if err := d.waitFile(ctx, "main", dir+"identity.yaml", true); err != nil {
		return nil, err
	}
	issued, wrote := "provider verified the Tenant, signed its CSR and committed identity.yaml", "consumer verified identity.yaml and wrote its kubeconfig Secret"
	if d.liqo {
		issued = "provider verified the Tenant and applied it; Liqo's tenant controller issued; provider committed identity.yaml"
		wrote = "consumer verified and applied the Identity; Liqo's identity controller wrote the kubeconfig Secret"
	}
	d.step("%s\n%s  %s", issued, strings.Repeat(" ", 10), sandbox.LastCommit(d.repo.Dir, "main", dir+"identity.yaml"))
	ns := authv1beta1.TenantNamespaceName(demoProvider)
	name := authv1beta1.KubeconfigSecretName(authv1beta1.ControlPlaneIdentityName(demoProvider))
	secret := &corev1.Secret{}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return consumer.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret) == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the consumer's kubeconfig: %w", err)
	}
	d.step("%s %s/%s", wrote, ns, name)
	return secret.Data[authv1beta1.KubeconfigSecretField], nil
}

// prove uses the consumer's kubeconfig against the provider.
func (d *demo) prove(ctx context.Context, kubeconfig []byte) error {
	cs, err := clientsetFor(kubeconfig)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\nUsing the consumer's kubeconfig against the provider:\n")
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  who am I?                                   user %q, groups %v\n", review.Status.UserInfo.Username, review.Status.UserInfo.Groups)
	tenantNS := authv1beta1.TenantNamespaceName(demoConsumer)
	allowed, err := canCreateResourceSlices(ctx, cs, tenantNS)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  may I create resourceslices in %s?  %s\n", tenantNS, yesNo(allowed))
	_, err = cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		return fmt.Errorf("listing Secrets with the consumer's kubeconfig should be forbidden, got %v", err)
	}
	fmt.Fprintf(d.out, "  list Secrets in all namespaces?             denied: %s\n", apierrors.ReasonForError(err))
	if !allowed || review.Status.UserInfo.Username != demoConsumer {
		return errors.New("the kubeconfig does not grant what the tenant role grants")
	}
	return nil
}

// merge merges branch into main in the reviewer's checkout and pushes it, as a reviewer would.
func (d *demo) merge(branch, message string) error {
	work := filepath.Join(d.dir, "reviewer")
	for _, args := range [][]string{
		{"pull", "-q", "--ff-only", "origin", "main"},
		{"fetch", "-q", "origin"},
		{"merge", "-q", "--no-ff", "origin/" + branch, "-m", message},
		{"push", "-q", "origin", "HEAD:main"},
	} {
		if _, err := sandbox.Git(work, args...); err != nil {
			return err
		}
	}
	return nil
}

// audit prints the timeline `gitpeer audit` reads from the repository's history.
func (d *demo) audit(ctx context.Context) error {
	work := filepath.Join(d.dir, "reviewer")
	if _, err := sandbox.Git(work, "pull", "-q", "--ff-only", "origin", "main"); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\nAudit trail (gitpeer audit of the reviewer's checkout):\n")
	cmd := exec.CommandContext(ctx, d.gitpeer, "audit", work)
	cmd.Stdout, cmd.Stderr = d.out, d.out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s audit: %w", d.gitpeer, err)
	}
	return nil
}

// revoke deletes tenant.yaml as a person would and waits for access to end.
func (d *demo) revoke(ctx context.Context, consumer *sandbox.Cluster, kubeconfig []byte) error {
	dir := demoProvider + "/" + demoConsumer + "/"
	fmt.Fprintf(d.out, "\nRevoking: %s deletes %stenant.yaml from main.\n", sandbox.ReviewerName, dir)
	work := filepath.Join(d.dir, "reviewer")
	for _, args := range [][]string{
		{"pull", "-q", "--ff-only", "origin", "main"},
		{"rm", "-q", dir + "tenant.yaml"},
		{"commit", "-q", "-m", "Revoke " + demoConsumer + " on " + demoProvider},
		{"push", "-q", "origin", "HEAD:main"},
	} {
		if _, err := sandbox.Git(work, args...); err != nil {
			return err
		}
	}
	if err := d.waitFile(ctx, "main", dir+"identity.yaml", false); err != nil {
		return err
	}
	d.step("provider deleted the Tenant and its RoleBinding, and removed identity.yaml\n%s  %s", strings.Repeat(" ", 10), sandbox.LastCommit(d.repo.Dir, "main", dir+"identity.yaml"))
	cs, err := clientsetFor(kubeconfig)
	if err != nil {
		return err
	}
	// In Liqo mode, Liqo's finalizer unbinds once the agent deleted the Tenant.
	allowed := true
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		allowed, err = canCreateResourceSlices(ctx, cs, authv1beta1.TenantNamespaceName(demoConsumer))
		return !allowed, err
	})
	if err != nil {
		return fmt.Errorf("access still allowed after revocation: %w", err)
	}
	d.step("the old kubeconfig may no longer create resourceslices: %s", yesNo(allowed))
	ns := authv1beta1.TenantNamespaceName(demoProvider)
	name := authv1beta1.KubeconfigSecretName(authv1beta1.ControlPlaneIdentityName(demoProvider))
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(consumer.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{})), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the consumer to drop its kubeconfig: %w", err)
	}
	d.step("consumer deleted its Identity and kubeconfig Secret")
	return nil
}

// liqoSpec is the spec.liqo of both PeeringRepositories: Liqo mode required
// with --liqo, and the default (Auto: standalone, without Liqo) otherwise.
func (d *demo) liqoSpec() *gitpeerv1alpha1.LiqoSpec {
	if !d.liqo {
		return nil
	}
	return &gitpeerv1alpha1.LiqoSpec{Mode: gitpeerv1alpha1.LiqoEnabled}
}

func (d *demo) explore(provider, consumer *sandbox.Cluster) {
	fmt.Fprintf(d.out, "\nEverything stays up until you press Ctrl-C:\n")
	fmt.Fprintf(d.out, "  provider kubeconfig:  %s\n", provider.CP.KubeconfigPath)
	fmt.Fprintf(d.out, "  consumer kubeconfig:  %s\n", consumer.CP.KubeconfigPath)
	fmt.Fprintf(d.out, "  repository:           %s  (git clone %s)\n", d.repo.Dir, d.repo.Dir)
	fmt.Fprintf(d.out, "  agent logs:           %s\n", filepath.Join(d.dir, "*", "agent.log"))
	fmt.Fprintf(d.out, "  try: kubectl --kubeconfig %s get peeringrepositories,tenants -A\n", provider.CP.KubeconfigPath)
}

// waitFile waits until path on ref exists (present) or is gone (!present).
func (d *demo) waitFile(ctx context.Context, ref, path string, present bool) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return (sandbox.Show(d.repo.Dir, ref, path) != "") == present, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s on %s (agent logs in %s): %w", path, ref, d.dir, err)
	}
	return nil
}

func (d *demo) step(format string, args ...any) {
	fmt.Fprintf(d.out, "[%6s] %s\n", d.elapsed(), fmt.Sprintf(format, args...))
}

func (d *demo) elapsed() string {
	return time.Since(d.began).Round(100 * time.Millisecond).String()
}

func clientsetFor(kubeconfig []byte) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

func canCreateResourceSlices(ctx context.Context, cs *kubernetes.Clientset, namespace string) (bool, error) {
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "create", Group: authv1beta1.GroupVersion.Group, Resource: "resourceslices", Namespace: namespace,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
