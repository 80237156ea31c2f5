package gitsync_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/test/gitserver"
)

// The benchmark repository: providers × consumers peering directories, each
// with request, nonce, tenant and identity files.
const (
	benchProviders = 100
	benchConsumers = 100
	childEnv       = "GITSYNC_BENCH_CHILD"
)

var peeringFiles = []string{"request.yaml", "nonce.yaml", "tenant.yaml", "identity.yaml"}

// benchRepo is a server holding the 10,000-directory repository, built once
// per test process with git fast-import and removed when the process ends.
type benchRepo struct {
	dir    string
	srv    *gitserver.Server
	repo   gitserver.Repo
	cliURL string
	serial int
}

var (
	benchOnce sync.Once
	bench     *benchRepo
	benchErr  error
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runMemoryChild())
	}
	code := m.Run()
	if bench != nil {
		bench.srv.Stop()
		os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

func getBench(b *testing.B) *benchRepo {
	benchOnce.Do(func() { bench, benchErr = newBenchRepo() })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return bench
}

func newBenchRepo() (*benchRepo, error) {
	dir, err := os.MkdirTemp("", "gitsync-bench-")
	if err != nil {
		return nil, err
	}
	srv, err := gitserver.New(dir)
	if err != nil {
		return nil, err
	}
	repo, err := srv.NewRepo("peers")
	if err != nil {
		return nil, err
	}
	br := &benchRepo{dir: dir, srv: srv, repo: repo, cliURL: srv.HTTPURLWithCredentials(repo)}
	var in bytes.Buffer
	in.WriteString("commit refs/heads/main\ncommitter gen <gen@example.com> 1700000000 +0000\ndata 5\nseed\n")
	for p := range benchProviders {
		for c := range benchConsumers {
			for _, name := range peeringFiles {
				body := peeringDoc(p, c, name, 0)
				fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", peeringPath(p, c, name), len(body), body)
			}
		}
	}
	return br, fastImport(repo.Dir, &in)
}

func peeringPath(p, c int, name string) string {
	return fmt.Sprintf("provider-%03d/consumer-%03d/%s", p, c, name)
}

func peeringDoc(p, c int, name string, serial int) string {
	return fmt.Sprintf("apiVersion: gitpeer.io/v1alpha1\nkind: %s\nspec:\n  providerClusterID: provider-%03d\n  consumerClusterID: consumer-%03d\n  serial: %d\n  nonce: %s\n",
		strings.TrimSuffix(name, ".yaml"), p, c, serial, strings.Repeat(fmt.Sprintf("%03d%03d", p, c), 14))
}

func fastImport(dir string, in *bytes.Buffer) error {
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Stdin = in
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("fast-import: %v: %s", err, out)
	}
	return nil
}

// change pushes (server side) one commit modifying one nonce file and
// returns its path relative to the repository root.
func (br *benchRepo) change(b *testing.B) string {
	br.serial++
	p, c := br.serial%benchProviders, (br.serial/benchProviders)%benchConsumers
	path := peeringPath(p, c, "nonce.yaml")
	body := peeringDoc(p, c, "nonce.yaml", br.serial)
	head := git(b, br.repo.Dir, "rev-parse", "main")
	var in bytes.Buffer
	fmt.Fprintf(&in, "commit refs/heads/main\ncommitter gen <gen@example.com> 1700000000 +0000\ndata 6\nchange\nfrom %s\nM 100644 inline %s\ndata %d\n%s\n",
		head, path, len(body), body)
	if err := fastImport(br.repo.Dir, &in); err != nil {
		b.Fatal(err)
	}
	return path
}

func (br *benchRepo) agent(b *testing.B, dir string) *gitsync.Repo {
	r, err := gitsync.Open(gitsync.Config{URL: br.repo.HTTPURL, Dir: dir,
		Auth: &gitsync.Auth{Username: br.srv.Username, Password: br.srv.Password}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close() })
	return r
}

// cliClone makes a bare clone with the git CLI, as an agent built on it would keep.
func (br *benchRepo) cliClone(b *testing.B, dir string) {
	git(b, "", "clone", "--quiet", "--bare", "--single-branch", "--branch", "main", br.cliURL, dir)
}

func BenchmarkNoChangePoll(b *testing.B) {
	br := getBench(b)
	b.Run("gitsync", func(b *testing.B) {
		agent := br.agent(b, filepath.Join(b.TempDir(), "clone"))
		mustPoll(b, agent)
		b.ResetTimer()
		for b.Loop() {
			mustPoll(b, agent)
		}
	})
	b.Run("git-cli", func(b *testing.B) {
		dir := filepath.Join(b.TempDir(), "clone")
		br.cliClone(b, dir)
		b.ResetTimer()
		for b.Loop() {
			git(b, dir, "fetch", "--quiet", "origin", "+refs/heads/main:refs/heads/main")
		}
	})
}

func BenchmarkIncrementalSync(b *testing.B) {
	br := getBench(b)
	b.Run("gitsync", func(b *testing.B) {
		agent := br.agent(b, filepath.Join(b.TempDir(), "clone"))
		last := mustPoll(b, agent)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			path := br.change(b)
			b.StartTimer()
			head := mustPoll(b, agent)
			cs, err := agent.Changes(last, head)
			if err != nil || len(cs.Changes) != 1 || cs.Changes[0].Path != path {
				b.Fatalf("changes %+v %v", cs, err)
			}
			if _, err := agent.ReadFile(head, path); err != nil {
				b.Fatal(err)
			}
			last = head
		}
	})
	b.Run("git-cli", func(b *testing.B) {
		dir := filepath.Join(b.TempDir(), "clone")
		br.cliClone(b, dir)
		last := git(b, dir, "rev-parse", "main")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			path := br.change(b)
			b.StartTimer()
			git(b, dir, "fetch", "--quiet", "origin", "+refs/heads/main:refs/heads/main")
			head := git(b, dir, "rev-parse", "main")
			if got := git(b, dir, "diff-tree", "-r", "--name-status", last, head); got != "M\t"+path {
				b.Fatalf("diff %q", got)
			}
			git(b, dir, "cat-file", "blob", head+":"+path)
			last = head
		}
	})
}

func BenchmarkInitialClone(b *testing.B) {
	br := getBench(b)
	b.Run("gitsync", func(b *testing.B) {
		for b.Loop() {
			mustPoll(b, br.agent(b, filepath.Join(b.TempDir(), "clone")))
		}
	})
	b.Run("git-cli", func(b *testing.B) {
		for b.Loop() {
			br.cliClone(b, filepath.Join(b.TempDir(), "clone"))
		}
	})
}

func BenchmarkFullListing(b *testing.B) {
	br := getBench(b)
	b.Run("gitsync", func(b *testing.B) {
		agent := br.agent(b, filepath.Join(b.TempDir(), "clone"))
		head := mustPoll(b, agent)
		b.ResetTimer()
		for b.Loop() {
			if l, err := agent.List(head); err != nil || len(l.Files) < benchProviders*benchConsumers*len(peeringFiles) {
				b.Fatal(err)
			}
		}
	})
	b.Run("git-cli", func(b *testing.B) {
		dir := filepath.Join(b.TempDir(), "clone")
		br.cliClone(b, dir)
		b.ResetTimer()
		for b.Loop() {
			git(b, dir, "ls-tree", "-r", "main")
		}
	})
}

// BenchmarkPeakMemory reports the peak RSS of a fresh agent process that
// clones the 10,000-directory repository, lists every change and reads every
// request, next to `git clone --bare` followed by `git ls-tree -r`. Peak RSS
// is measured by GNU time: a child's ru_maxrss seen from this (large) test
// process would include this process's RSS, which Linux carries across exec.
func BenchmarkPeakMemory(b *testing.B) {
	br := getBench(b)
	if _, err := os.Stat(gnuTime); err != nil {
		b.Skip("needs GNU time at " + gnuTime)
	}
	b.Run("gitsync", func(b *testing.B) {
		var peak int64
		for b.Loop() {
			env := append(os.Environ(), childEnv+"=1", "BENCH_URL="+br.repo.HTTPURL, "BENCH_DIR="+filepath.Join(b.TempDir(), "clone"),
				"BENCH_USER="+br.srv.Username, "BENCH_PASS="+br.srv.Password)
			peak = max(peak, peakRSS(b, env, os.Args[0], "-test.run=^$"))
		}
		b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	})
	b.Run("git-cli", func(b *testing.B) {
		var peak int64
		for b.Loop() {
			dir := filepath.Join(b.TempDir(), "clone")
			peak = max(peak, peakRSS(b, nil, "git", "clone", "--quiet", "--bare", "--single-branch", "--branch", "main", br.cliURL, dir))
			peak = max(peak, peakRSS(b, nil, "git", "-C", dir, "ls-tree", "-r", "main"))
		}
		b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	})
}

// BenchmarkClonePeak clones the 10,000-directory repository in a fresh
// process, gitsync (Open and Poll into an empty directory) and `git clone
// --bare --single-branch` alternated, and reports for each the wall time
// (with the process's start), the CPU time (user and system, children
// included) and the peak RSS (GNU time), and the ratios gitsync ÷ git of the
// median run (issue #27: at most 1.0× the time and 2× the peak RSS).
func BenchmarkClonePeak(b *testing.B) {
	br := getBench(b)
	if _, err := os.Stat(gnuTime); err != nil {
		b.Skip("needs GNU time at " + gnuTime)
	}
	var ours, theirs []usage
	for b.Loop() {
		env := append(os.Environ(), childEnv+"=1", "BENCH_CLONE_ONLY=1", "BENCH_URL="+br.repo.HTTPURL, "BENCH_DIR="+filepath.Join(b.TempDir(), "clone"),
			"BENCH_USER="+br.srv.Username, "BENCH_PASS="+br.srv.Password)
		ours = append(ours, measure(b, env, os.Args[0], "-test.run=^$"))
		theirs = append(theirs, measure(b, nil, "git", "clone", "--quiet", "--bare", "--single-branch", "--branch", "main", br.cliURL, filepath.Join(b.TempDir(), "clone")))
	}
	o, t := median(ours), median(theirs)
	b.ReportMetric(o.seconds, "gitsync-s")
	b.ReportMetric(t.seconds, "git-s")
	b.ReportMetric(o.cpu, "gitsync-cpu-s")
	b.ReportMetric(t.cpu, "git-cpu-s")
	b.ReportMetric(float64(o.kib)/1024, "gitsync-peak-RSS-MiB")
	b.ReportMetric(float64(t.kib)/1024, "git-peak-RSS-MiB")
	b.ReportMetric(o.seconds/t.seconds, "time-ratio")
	b.ReportMetric(float64(o.kib)/float64(t.kib), "RSS-ratio")
}

// median returns, field by field, the median of runs.
func median(runs []usage) usage {
	pick := func(f func(usage) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return usage{seconds: pick(func(u usage) float64 { return u.seconds }), cpu: pick(func(u usage) float64 { return u.cpu }),
		kib: int64(pick(func(u usage) float64 { return float64(u.kib) }))}
}

const gnuTime = "/usr/bin/time"

// usage is what GNU time reports of a command: its peak RSS in KiB (the
// largest of the process and the children it waited for), its wall time and
// its CPU time (user and system, children included), in seconds.
type usage struct {
	kib          int64
	seconds, cpu float64
}

// peakRSS runs the command under GNU time and returns its peak RSS in KiB.
func peakRSS(b *testing.B, env []string, name string, args ...string) int64 {
	return measure(b, env, name, args...).kib
}

// measure runs the command under GNU time and returns its usage.
func measure(b *testing.B, env []string, name string, args ...string) usage {
	out := filepath.Join(b.TempDir(), "rss")
	cmd := exec.Command(gnuTime, append([]string{"-f", "%M %e %U %S", "-o", out, name}, args...)...)
	cmd.Env = env
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v: %s", cmd, err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	var u usage
	var user, sys float64
	if _, err := fmt.Sscan(string(data), &u.kib, &u.seconds, &user, &sys); err != nil {
		b.Fatalf("GNU time's output %q: %v", data, err)
	}
	u.cpu = user + sys
	return u
}

// runMemoryChild is the agent process of BenchmarkPeakMemory.
func runMemoryChild() int {
	r, err := gitsync.Open(gitsync.Config{URL: os.Getenv("BENCH_URL"), Dir: os.Getenv("BENCH_DIR"),
		Auth: &gitsync.Auth{Username: os.Getenv("BENCH_USER"), Password: os.Getenv("BENCH_PASS")}})
	if err == nil {
		if os.Getenv("BENCH_CLONE_ONLY") != "" {
			_, err = r.Poll(context.Background())
		} else {
			err = cloneAndReadRequests(r)
		}
		_ = r.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func cloneAndReadRequests(r *gitsync.Repo) error {
	head, err := r.Poll(context.Background())
	if err != nil {
		return err
	}
	cs, err := r.Changes(plumbing.ZeroHash, head)
	if err != nil {
		return err
	}
	for _, c := range cs.Changes {
		if strings.HasSuffix(c.Path, "/request.yaml") {
			if _, err := r.ReadFile(head, c.Path); err != nil {
				return err
			}
		}
	}
	return nil
}

// BenchmarkRetainedAfterPoll reports the heap an open clone of the
// 10,000-peering repository keeps after it was cloned, every file of it read
// (as a first round does) and polled again with no change: go-git's object
// cache, pack index, gitsync's tree cache. Each iteration is one no-change
// poll; retained-MiB is measured after the last one.
func BenchmarkRetainedAfterPoll(b *testing.B) {
	br := getBench(b)
	before := gitsync.LiveHeap()
	agent := br.agent(b, filepath.Join(b.TempDir(), "clone"))
	head := mustPoll(b, agent)
	l, err := agent.List(head)
	if err != nil {
		b.Fatal(err)
	}
	round := agent.NewRound(head)
	for _, f := range l.Files {
		if _, err := round.ReadFile(f); err != nil {
			b.Fatal(err)
		}
	}
	l = nil
	b.ResetTimer()
	for b.Loop() {
		mustPoll(b, agent)
	}
	b.StopTimer()
	reportRetained(b, before)
	runtime.KeepAlive(agent)
}

// BenchmarkLargeWrite writes a new identity.yaml in each of the 10,000
// peering directories as one commit and pushes it, as a provider's round
// issuing 10,000 identities does. It runs after the benchmarks above: its
// commits change the benchmark repository.
func BenchmarkLargeWrite(b *testing.B) {
	br := getBench(b)
	before := gitsync.LiveHeap()
	agent := br.agent(b, filepath.Join(b.TempDir(), "clone"))
	mustPoll(b, agent)
	var peak float64 // bytes over the live heap before a write
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		changes := make([]gitsync.FileChange, 0, benchProviders*benchConsumers)
		for p := range benchProviders {
			for c := range benchConsumers {
				changes = append(changes, gitsync.Put(peeringPath(p, c, "identity.yaml"), identityDoc()))
			}
		}
		base := gitsync.LiveHeap()
		b.StartTimer()
		stop := watchLiveHeap()
		if res, err := agent.Write(context.Background(), message("identities"), changes); err != nil || !res.Pushed {
			b.Fatalf("write: %+v, %v", res, err)
		}
		peak = max(peak, stop()-float64(base))
	}
	b.StopTimer()
	b.ReportMetric(peak/(1<<20), "peak-live-MiB")
	reportRetained(b, before)
	runtime.KeepAlive(agent)
}

// watchLiveHeap samples the live heap (as of the last collection,
// runtime/metrics /gc/heap/live:bytes) every millisecond until the returned
// function is called, which returns the largest seen.
func watchLiveHeap() func() float64 {
	done, peak := make(chan struct{}), make(chan float64)
	go func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var most uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			most = max(most, sample[0].Value.Uint64())
			select {
			case <-done:
				peak <- float64(most)
				return
			case <-tick.C:
			}
		}
	}()
	return func() float64 {
		close(done)
		return <-peak
	}
}

// BenchmarkSmallWrite writes one file to the 10,000-peering repository after
// BenchmarkLargeWrite's commits: what a write costs that lost to another
// writer and is retried, or a round that issues one identity.
func BenchmarkSmallWrite(b *testing.B) {
	br := getBench(b)
	agent := br.agent(b, filepath.Join(b.TempDir(), "clone"))
	mustPoll(b, agent)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		mustWrite(b, agent, "one", gitsync.Put(fmt.Sprintf("small/%d.yaml", i), identityDoc()))
	}
}

// identityEntropy is the number of random bytes in an identityDoc.
const identityEntropy = 1200

// identityDoc is an identity-sized file of random base64, which neither
// compresses nor deltas, like the certificates and keys it stands for.
func identityDoc() []byte {
	cert := make([]byte, identityEntropy)
	_, _ = rand.Read(cert)
	return []byte("apiVersion: gitpeer.io/v1alpha1\nkind: Identity\nspec:\n  certificate: " + base64.StdEncoding.EncodeToString(cert) + "\n")
}

// reportRetained reports, as retained-MiB, how much the live heap grew since
// before (a LiveHeap figure). With GITSYNC_HEAPPROFILE set to a directory,
// it also writes the heap profile there, to see who retains it
// (`go tool pprof -sample_index=inuse_space`).
func reportRetained(b *testing.B, before uint64) {
	after := gitsync.LiveHeap()
	b.ReportMetric((float64(after)-float64(before))/(1<<20), "retained-MiB")
	dir := os.Getenv("GITSYNC_HEAPPROFILE")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "_")+".heap"))
	if err == nil {
		err = errors.Join(pprof.WriteHeapProfile(f), f.Close())
	}
	if err != nil {
		b.Error(err)
	}
}

// BenchmarkRepack repacks the clone of the 10,000-peering repository into
// one pack, as a write or fetch does once the clone holds more than
// MaxPacks packs: the cost a bounded clone pays every MaxPacks writes and
// fetches. pack-MiB is the size of the pack it writes (whole objects, no
// deltas) over that of the pack the first fetch stored.
func BenchmarkRepack(b *testing.B) {
	br := getBench(b)
	dir := filepath.Join(b.TempDir(), "clone")
	agent := br.agent(b, dir)
	mustPoll(b, agent)
	packSize := func() float64 {
		names, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
		if err != nil || len(names) != 1 {
			b.Fatalf("packs %v: %v", names, err)
		}
		fi, err := os.Stat(names[0])
		if err != nil {
			b.Fatal(err)
		}
		return float64(fi.Size()) / (1 << 20)
	}
	fetched := packSize()
	var peak float64
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		base := gitsync.LiveHeap()
		stop := watchLiveHeap()
		if err := agent.Repack(); err != nil {
			b.Fatal(err)
		}
		peak = max(peak, stop()-float64(base))
	}
	b.StopTimer()
	b.ReportMetric(peak/(1<<20), "peak-live-MiB")
	b.ReportMetric(packSize(), "pack-MiB")
	b.ReportMetric(fetched, "fetched-pack-MiB")
	if _, err := agent.List(mustPoll(b, agent)); err != nil {
		b.Fatal(err)
	}
}
