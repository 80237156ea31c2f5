package quickstart_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/gitserver"
	"github.com/gitpeer/gitpeer/test/installed"
	"github.com/gitpeer/gitpeer/test/process"
	"github.com/gitpeer/gitpeer/test/quickstart"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

func TestQuickstart(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "docs/quickstart.md, run as written")
}

const page = "../../docs/quickstart.md"

// blockTimeout bounds one block; the page's own waits time out sooner (3m).
const blockTimeout = 4 * time.Minute

// cluster is one of the page's two clusters: a control plane and, once the page installed
// gitpeer, the installed agent running as its ServiceAccount.
type cluster struct {
	context string
	cp      *controlplane.ControlPlane
	agent   *installed.Agent
}

var _ = Describe("The quickstart", Ordered, func() {
	blocks, parseErr := readPage()
	var (
		work     string
		env      []string
		vars     string
		clusters = map[string]*cluster{}
	)

	BeforeAll(func() {
		Expect(parseErr).NotTo(HaveOccurred())
		work = GinkgoT().TempDir()
		bin := filepath.Join(work, ".bin")
		Expect(os.MkdirAll(bin, 0o755)).To(Succeed())
		tools(bin)

		git := gitserver.Start(GinkgoT())
		repo, err := git.NewRepo("peerings") // the empty repository the reader creates on a forge
		Expect(err).NotTo(HaveOccurred())
		keys := filepath.Join(work, ".keys")
		Expect(os.MkdirAll(keys, 0o700)).To(Succeed())
		key, knownHosts := filepath.Join(keys, "deploy-key"), filepath.Join(keys, "known_hosts")
		Expect(os.WriteFile(key, git.ClientKey, 0o600)).To(Succeed())
		Expect(os.WriteFile(knownHosts, git.KnownHosts, 0o600)).To(Succeed())

		// Both control planes at once: each takes seconds.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, name := range []string{"provider", "consumer"} {
			c := &cluster{context: name}
			clusters[name] = c
			wg.Go(func() { c.cp, errs[i] = controlplane.New(context.Background(), "") })
		}
		wg.Wait()
		for _, c := range clusters {
			if c.cp != nil {
				DeferCleanup(c.cp.Stop)
			}
		}
		Expect(errs).To(HaveEach(Succeed()))
		kubeconfig := filepath.Join(work, ".kube", "config")
		Expect(writeKubeconfig(kubeconfig, clusters["provider"], clusters["consumer"])).To(Succeed())

		chart, err := filepath.Abs("../../charts/gitpeer")
		Expect(err).NotTo(HaveOccurred())
		home := filepath.Join(work, ".home")
		Expect(os.MkdirAll(home, 0o700)).To(Succeed())
		// The reader's terminal: their kubeconfig, their SSH access to the repository, their name
		// on commits, the tools on PATH.
		env = append(os.Environ(),
			"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"HOME="+home, "KUBECONFIG="+kubeconfig, "TMPDIR="+GinkgoT().TempDir(),
			"GIT_SSH_COMMAND=ssh -F /dev/null -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes -i "+key+" -o UserKnownHostsFile="+knownHosts,
			"GIT_AUTHOR_NAME="+sandbox.ReviewerName, "GIT_AUTHOR_EMAIL="+sandbox.ReviewerEmail,
			"GIT_COMMITTER_NAME="+sandbox.ReviewerName, "GIT_COMMITTER_EMAIL="+sandbox.ReviewerEmail,
		)
		// The settings of this environment, in place of the page's examples; the cluster IDs stay
		// the page's, which its expected outputs name.
		vars, err = settings(blocks, map[string]string{
			"PROVIDER_CONTEXT": "provider", "CONSUMER_CONTEXT": "consumer",
			"PROVIDER_API_SERVER": clusters["provider"].cp.URL,
			"REPO_URL":            repo.SSHURL,
			"PROVIDER_DEPLOY_KEY": key, "CONSUMER_DEPLOY_KEY": key, "KNOWN_HOSTS": knownHosts,
			"GITPEER_CHART": chart,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			for _, c := range clusters {
				if c.agent != nil {
					Expect(c.agent.Stop(30 * time.Second)).To(Succeed())
				}
			}
		})
	})

	// After a failure, the agents' logs say why the page's waits did not end.
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			for _, c := range clusters {
				if c.agent != nil {
					AddReportEntry("agent log of the "+c.context, tail(c.agent.Logs(), 60))
				}
			}
		}
	})

	It("has its blocks tagged as this suite runs them", func() {
		Expect(parseErr).NotTo(HaveOccurred())
		count := map[string]int{}
		for _, b := range blocks {
			count[b.Tag]++
		}
		Expect(count[quickstart.TagVariables]).To(Equal(1), "one {variables} block")
		Expect(count[quickstart.TagPodStarts]).To(Equal(1), "one {pod-starts} block: the only one not run as written")
		Expect(count[""]).To(BeNumerically(">=", 10))
	})

	for _, b := range blocks {
		switch b.Tag {
		case quickstart.TagVariables:
			continue // part of every block's script
		case quickstart.TagPodStarts:
			It("starts the installed agents in place of the pods, block at "+b.Name(), func(ctx SpecContext) {
				for _, c := range []*cluster{clusters["provider"], clusters["consumer"]} {
					c.agent = startInstalledAgent(ctx, c, work)
				}
			})
		default:
			It("runs the block at "+b.Name(), func(ctx SpecContext) {
				out, err := run(ctx, work, env, vars+b.Script)
				Expect(err).NotTo(HaveOccurred(), "docs/quickstart.md, block at %s failed:\n%s\n--- its output:\n%s", b.Name(), b.Script, out)
				Expect(quickstart.Missing(out, b.Output)).To(BeEmpty(), "docs/quickstart.md, block at %s: its output lacks lines of the {output} block after it:\n%s", b.Name(), out)
			}, SpecTimeout(blockTimeout+30*time.Second))
		}
	}
})

// readPage parses the page; an error fails the suite's first spec.
func readPage() ([]quickstart.Block, error) {
	data, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	return quickstart.Parse(string(data))
}

// tools puts kubectl, helm and gitpeer in bin: kubectl and helm as `make tools` and `make test`
// build them, gitpeer built from this checkout.
func tools(bin string) {
	GinkgoHelper()
	toolsDir, err := process.Find("GITPEER_TOOLS_BIN", filepath.Join("tools", "*"))
	Expect(err).NotTo(HaveOccurred())
	helm, err := process.Find("GITPEER_HELM", filepath.Join("helm", "helm-*"))
	Expect(err).NotTo(HaveOccurred(), "helm: run `make helm-lint` (make test does)")
	for name, path := range map[string]string{"kubectl": filepath.Join(toolsDir, "kubectl"), "helm": helm} {
		_, err := os.Stat(path)
		Expect(err).NotTo(HaveOccurred(), "%s: run `make tools`", name)
		Expect(os.Symlink(path, filepath.Join(bin, name))).To(Succeed())
	}
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "gitpeer"), "github.com/gitpeer/gitpeer/cmd/gitpeer")
	build.Stdout, build.Stderr = GinkgoWriter, GinkgoWriter
	Expect(build.Run()).To(Succeed(), "go build ./cmd/gitpeer")
}

// writeKubeconfig writes a kubeconfig with one context per cluster, named as the cluster's
// context, as a reader's kubeconfig holds both clusters.
func writeKubeconfig(path string, clusters ...*cluster) error {
	kc := clientcmdapi.NewConfig()
	for _, c := range clusters {
		kc.Clusters[c.context] = &clientcmdapi.Cluster{Server: c.cp.URL, CertificateAuthorityData: c.cp.Config.CAData}
		kc.AuthInfos[c.context] = &clientcmdapi.AuthInfo{ClientCertificateData: c.cp.Config.CertData, ClientKeyData: c.cp.Config.KeyData}
		kc.Contexts[c.context] = &clientcmdapi.Context{Cluster: c.context, AuthInfo: c.context}
	}
	kc.CurrentContext = clusters[0].context
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*kc, path)
}

var exported = regexp.MustCompile(`\b([A-Z][A-Z0-9_]*)=`)

// settings returns the script run before every block: the page's {variables} block, then the
// values of this environment. Each must be one the block sets, so a renamed setting fails here
// rather than leaving the page's example in place.
func settings(blocks []quickstart.Block, values map[string]string) (string, error) {
	var script string
	for _, b := range blocks {
		if b.Tag == quickstart.TagVariables {
			script = b.Script
		}
	}
	set := map[string]bool{}
	for _, m := range exported.FindAllStringSubmatch(script, -1) {
		set[m[1]] = true
	}
	var b strings.Builder
	b.WriteString(script)
	for name, v := range values {
		if !set[name] {
			return "", fmt.Errorf("docs/quickstart.md's {variables} block does not set %s", name)
		}
		fmt.Fprintf(&b, "export %s=%q\n", name, v)
	}
	return b.String(), nil
}

// run runs script with bash -euo pipefail in dir, as the reader's terminal would, and returns its
// output; the whole process group is killed if it outlives blockTimeout or ctx.
func run(ctx context.Context, dir string, env []string, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (after %s)", ctx.Err(), blockTimeout)
	}
	return out.String(), err
}

// startInstalledAgent does what the kubelet would for the Deployment gitpeer-agent the page
// installed on c: it runs the gitpeer binary with the Deployment's arguments, as its
// ServiceAccount (test/installed), with the addresses disabled (both agents share the host).
func startInstalledAgent(ctx context.Context, c *cluster, work string) *installed.Agent {
	GinkgoHelper()
	admin, err := client.New(c.cp.Config, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	dep := &appsv1.Deployment{}
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: "gitpeer-system", Name: "gitpeer-agent"}, dep)).To(Succeed(), "the installed Deployment")
	pod := dep.Spec.Template.Spec
	dir := filepath.Join(work, ".agents", c.context)
	kubeconfig := filepath.Join(dir, "agent.kubeconfig")
	Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
	Expect(installed.ServiceAccountKubeconfig(ctx, c.cp.Config, dep.Namespace, pod.ServiceAccountName, kubeconfig)).To(Succeed())
	// The Deployment passes its namespace as RUNTIME_NAMESPACE (a field reference), as test/installed resolves it.
	args := installed.AgentArgs(dep, map[string]string{"RUNTIME_NAMESPACE": dep.Namespace}, map[string]string{
		"--kubeconfig": kubeconfig, "--data-dir": filepath.Join(dir, "data"),
		"--metrics-addr": "0", "--health-addr": "0", "--webhook-addr": "0",
	})
	agent, err := installed.StartAgent(filepath.Join(work, ".bin", "gitpeer"), args, dir, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	return agent
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
