package gitsync_test

import (
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"

	"github.com/gitpeer/gitpeer/gitsync"
)

// chainLength is the number of versions of one file in deltaRepo: its pack
// holds a delta chain about this long.
const chainLength = 150

// deltaRepo fills the server repository with chainLength commits, each
// changing one line of chain.txt (so that each version is best stored as a
// delta of the next), and a 12 MiB random blob (larger than the indexer's
// cache) changed in the second commit, then repacks it with deep delta
// chains, which the server keeps when it sends a pack. It returns the hashes
// of the two versions of the big blob.
func deltaRepo(t *testing.T, f *fixture) [2]string {
	t.Helper()
	big := make([]byte, 12<<20)
	_, _ = rand.Read(big)
	lines := make([]string, 100)
	for i := range lines {
		lines[i] = rand.Text()
	}
	var in bytes.Buffer
	for i := range chainLength {
		lines[i%len(lines)] = rand.Text()
		chain := strings.Join(lines, "\n")
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter gen <gen@example.com> %d +0000\ndata 3\nc%d\n", 1700000000+i, i%10)
		fmt.Fprintf(&in, "M 100644 inline chain.txt\ndata %d\n%s\n", len(chain), chain)
		if i < 2 {
			big[i*1000] ^= 0xff
			fmt.Fprintf(&in, "M 100644 inline big.bin\ndata %d\n%s\n", len(big), big)
		}
	}
	if err := fastImport(f.repo.Dir, &in); err != nil {
		t.Fatal(err)
	}
	git(t, f.repo.Dir, "config", "pack.depth", "250")
	git(t, f.repo.Dir, "repack", "-adfq", "--depth=250", "--window=250")
	return [2]string{git(t, f.repo.Dir, "rev-parse", "main~"+strconv.Itoa(chainLength-1)+":big.bin"),
		git(t, f.repo.Dir, "rev-parse", "main~"+strconv.Itoa(chainLength-2)+":big.bin")}
}

// TestInitialClonePack clones a repository whose pack holds a long delta
// chain and a delta against a base larger than the indexer's cache: the
// clone's index is the one `git index-pack` builds, `git fsck --full`
// passes, and later fetches and pushes work.
func TestInitialClonePack(t *testing.T) {
	f := newFixture(t, "deltas")
	bigs := deltaRepo(t, f)
	dir := filepath.Join(t.TempDir(), "clone")
	agent := f.open(f.repo.HTTPURL, f.httpAuth(), func(c *gitsync.Config) { c.Dir = dir })
	head := mustPoll(t, agent)
	if want := git(t, f.repo.Dir, "rev-parse", "main"); head.String() != want {
		t.Fatalf("head %s, want %s", head, want)
	}
	pack := onlyPack(t, dir)
	assertGitIndex(t, pack)
	stats := git(t, dir, "verify-pack", "-v", strings.TrimSuffix(pack, ".pack")+".idx")
	if depth := maxChain(stats); depth < chainLength-10 {
		t.Fatalf("longest delta chain %d, want about %d:\n%s", depth, chainLength, stats)
	}
	if !strings.Contains(stats, " "+bigs[0]+"\n") && !strings.Contains(stats, " "+bigs[1]+"\n") {
		t.Fatalf("neither big blob is a delta of the other:\n%s", stats)
	}
	git(t, dir, "fsck", "--full", "--strict", "--no-dangling")

	// The clone keeps working: an incremental fetch, a read, a push.
	var in bytes.Buffer
	fmt.Fprintf(&in, "commit refs/heads/main\ncommitter gen <gen@example.com> 1800000000 +0000\ndata 4\nmore\nfrom refs/heads/main^0\nM 100644 inline chain.txt\ndata 4\nnew\n\n")
	if err := fastImport(f.repo.Dir, &in); err != nil {
		t.Fatal(err)
	}
	head = mustPoll(t, agent)
	if got, err := agent.ReadFile(head, "chain.txt"); err != nil || string(got) != "new\n" {
		t.Fatalf("chain.txt after fetch: %q, %v", got, err)
	}
	mustWrite(t, agent, "push", gitsync.Put("p/c/nonce.yaml", []byte("n")))
	git(t, f.repo.Dir, "fsck", "--strict", "--no-dangling")
	git(t, dir, "fsck", "--full", "--strict", "--no-dangling")
}

// TestIndexPackRefDeltas indexes packs of ref-deltas: as `git pack-objects`
// writes them without --delta-base-offset (base first), and a crafted one
// whose deltas come before their base.
func TestIndexPackRefDeltas(t *testing.T) {
	t.Run("git", func(t *testing.T) {
		f := newFixture(t, "refdeltas")
		deltaRepo(t, f)
		cmd := exec.Command("git", "pack-objects", "--revs", "--stdout", "-q")
		cmd.Dir, cmd.Stdin = f.repo.Dir, strings.NewReader("main\n")
		pack, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		dir := indexPack(t, pack)
		assertGitIndex(t, onlyPack(t, dir))
		git(t, dir, "fsck", "--full", "--strict")
	})
	t.Run("delta before base", func(t *testing.T) {
		base := []byte(strings.Repeat("a peering document of some length\n", 20))
		first := append(bytes.Clone(base), "one more line\n"...)
		second := append(bytes.Clone(first), "and another\n"...)
		var p packBuilder
		at := p.refDelta(plumbing.ComputeHash(plumbing.BlobObject, base), packfile.DiffDelta(base, first))
		p.ofsDelta(at, packfile.DiffDelta(first, second))
		p.whole(plumbing.BlobObject, base)
		dir := indexPack(t, p.pack())
		assertGitIndex(t, onlyPack(t, dir))
		git(t, dir, "fsck", "--full", "--strict")
		if got := git(t, dir, "cat-file", "blob", plumbing.ComputeHash(plumbing.BlobObject, second).String()); got+"\n" != string(second) {
			t.Fatalf("second = %q", got)
		}
	})
}

// TestIndexPackRefusesBadPacks: a truncated or corrupt pack, a delta chain
// longer than Git allows and a delta whose base is missing each fail with an
// error naming the pack, and leave nothing in objects/pack.
func TestIndexPackRefusesBadPacks(t *testing.T) {
	var good packBuilder
	good.whole(plumbing.BlobObject, []byte(strings.Repeat("some content\n", 100)))
	good.whole(plumbing.BlobObject, []byte(strings.Repeat("other content\n", 100)))
	valid := good.pack()
	flipped := bytes.Clone(valid)
	flipped[len(flipped)/2] ^= 0x40
	var missing packBuilder
	missing.refDelta(plumbing.ComputeHash(plumbing.BlobObject, []byte("absent")), packfile.DiffDelta([]byte("absent"), []byte("absent!")))
	for _, c := range []struct {
		name string
		pack []byte
		want string
	}{
		{"truncated", valid[:len(valid)/2], "unexpected EOF"},
		{"corrupt", flipped, "index fetched pack"},
		{"chain too long", deltaChain(4096), "delta chain longer than 4095"},
		{"missing base", missing.pack(), "not in the pack"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := bareRepo(t)
			err := gitsync.IndexPack(dir, bytes.NewReader(c.pack))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "pack") {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
			assertNoPacks(t, dir)
		})
	}
	t.Run("chain as long as Git allows", func(t *testing.T) {
		dir := indexPack(t, deltaChain(4095))
		git(t, dir, "fsck", "--full", "--strict")
	})
}

// TestInitialCloneCorruptPack: a first fetch whose pack arrives corrupt or
// cut short fails, leaves no pack and no head, and the next poll clones.
func TestInitialCloneCorruptPack(t *testing.T) {
	f := newFixture(t, "corrupt")
	writer := f.openHTTP()
	for i := range 20 {
		mustWrite(t, writer, "seed", gitsync.Put(fmt.Sprintf("p/c%d/request.yaml", i), bytes.Repeat([]byte{byte('a' + i)}, 2000)))
	}
	for _, c := range []struct {
		name  string
		spoil func([]byte) []byte
	}{
		{"corrupt", flipPackByte},
		{"cut short", func(body []byte) []byte { return body[:len(body)/2] }},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxy := newSpoilingProxy(t, f.repo.HTTPURL)
			dir := filepath.Join(t.TempDir(), "clone")
			agent := f.open(proxy.URL, f.httpAuth(), func(cfg *gitsync.Config) { cfg.Dir = dir })
			proxy.spoil.Store(&c.spoil)
			if _, err := agent.Poll(ctx(t)); err == nil {
				t.Fatal("poll of a spoilt pack succeeded")
			} else {
				t.Logf("poll: %v", err)
			}
			if !agent.Head().IsZero() {
				t.Fatalf("head %s after a failed clone", agent.Head())
			}
			assertNoPacks(t, dir)
			if head := mustPoll(t, agent); head != writer.Head() {
				t.Fatalf("head %s, want %s", head, writer.Head())
			}
			git(t, dir, "fsck", "--full", "--strict", "--no-dangling")
		})
	}
}

// spoilingProxy forwards to a Git server over HTTP; the next upload-pack
// response goes through spoil, if set.
type spoilingProxy struct {
	URL   string
	spoil atomic.Pointer[func([]byte) []byte]
}

func newSpoilingProxy(t *testing.T, repoURL string) *spoilingProxy {
	u, err := url.Parse(repoURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &spoilingProxy{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodPost || !strings.HasSuffix(resp.Request.URL.Path, "/git-upload-pack") {
			return nil
		}
		spoil := p.spoil.Swap(nil)
		if spoil == nil {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		body = (*spoil)(body)
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	p.URL = srv.URL + u.Path
	return p
}

// flipPackByte flips a byte in the middle of the pack an upload-pack
// response carries (side-band channel 1), keeping the pkt-line framing.
func flipPackByte(body []byte) []byte {
	var packLen int
	for s := pktline.NewScanner(bytes.NewReader(body)); s.Scan(); {
		if b := s.Bytes(); len(b) > 0 && b[0] == 1 {
			packLen += len(b) - 1
		}
	}
	var out bytes.Buffer
	e := pktline.NewEncoder(&out)
	seen, target := 0, packLen/2
	for s := pktline.NewScanner(bytes.NewReader(body)); s.Scan(); {
		b := bytes.Clone(s.Bytes())
		if len(b) == 0 {
			_ = e.Flush()
			continue
		}
		if b[0] == 1 {
			if seen <= target && target < seen+len(b)-1 {
				b[1+target-seen] ^= 0x40
			}
			seen += len(b) - 1
		}
		_ = e.Encode(b)
	}
	return out.Bytes()
}

// packBuilder writes a pack object by object, for packs Git would not write.
type packBuilder struct {
	objects bytes.Buffer
	count   uint32
}

// whole adds an object stored whole and returns its offset.
func (p *packBuilder) whole(typ plumbing.ObjectType, data []byte) int64 {
	return p.add(typ, len(data), nil, data)
}

// refDelta adds a delta against the object of hash base.
func (p *packBuilder) refDelta(base plumbing.Hash, delta []byte) int64 {
	return p.add(plumbing.REFDeltaObject, len(delta), base[:], delta)
}

// ofsDelta adds a delta against the object at offset base.
func (p *packBuilder) ofsDelta(base int64, delta []byte) int64 {
	at := p.offset()
	rel := at - base // Git's offset encoding: big-endian base 128, each continued byte minus one
	enc := []byte{byte(rel & 127)}
	for rel >>= 7; rel > 0; rel >>= 7 {
		rel--
		enc = append([]byte{byte(128 | rel&127)}, enc...)
	}
	return p.add(plumbing.OFSDeltaObject, len(delta), enc, delta)
}

func (p *packBuilder) offset() int64 { return int64(12 + p.objects.Len()) }

func (p *packBuilder) add(typ plumbing.ObjectType, size int, ref, data []byte) int64 {
	at := p.offset()
	b := byte(typ)<<4 | byte(size&15)
	for size >>= 4; size > 0; size >>= 7 {
		p.objects.WriteByte(b | 128)
		b = byte(size & 127)
	}
	p.objects.WriteByte(b)
	p.objects.Write(ref)
	z := zlib.NewWriter(&p.objects)
	_, _ = z.Write(data)
	_ = z.Close()
	p.count++
	return at
}

// pack returns the pack: header, objects, checksum.
func (p *packBuilder) pack() []byte {
	out := append([]byte("PACK"), 0, 0, 0, 2)
	out = binary.BigEndian.AppendUint32(out, p.count)
	out = append(out, p.objects.Bytes()...)
	sum := sha1.Sum(out)
	return append(out, sum[:]...)
}

// deltaChain is a pack of a blob and n deltas, each against the one before.
func deltaChain(n int) []byte {
	var p packBuilder
	content := []byte("start of a long chain\n")
	at := p.whole(plumbing.BlobObject, content)
	for i := range n {
		next := fmt.Appendf(bytes.Clone(content), "%d\n", i)
		at = p.ofsDelta(at, packfile.DiffDelta(content, next))
		content = next
	}
	return p.pack()
}

// bareRepo creates an empty bare repository.
func bareRepo(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "bare")
	git(t, "", "init", "--quiet", "--bare", dir)
	return dir
}

// indexPack stores pack in a new bare repository with gitsync.IndexPack.
func indexPack(t *testing.T, pack []byte) string {
	t.Helper()
	dir := bareRepo(t)
	if err := gitsync.IndexPack(dir, bytes.NewReader(pack)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// onlyPack returns the path of the one pack in the repository at dir.
func onlyPack(t *testing.T, dir string) string {
	t.Helper()
	packs, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	if err != nil || len(packs) != 1 {
		t.Fatalf("packs %v, %v", packs, err)
	}
	return packs[0]
}

// assertGitIndex checks that the pack's index is the one `git index-pack`
// builds for it.
func assertGitIndex(t *testing.T, pack string) {
	t.Helper()
	want := filepath.Join(t.TempDir(), "git.idx")
	git(t, "", "index-pack", "-o", want, pack)
	got, err := os.ReadFile(strings.TrimSuffix(pack, ".pack") + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	if wantBytes, err := os.ReadFile(want); err != nil || !bytes.Equal(got, wantBytes) {
		t.Fatalf("index differs from git index-pack's (%d bytes, git's %d): %v", len(got), len(wantBytes), err)
	}
}

// assertNoPacks checks that objects/pack in dir holds no file.
func assertNoPacks(t *testing.T, dir string) {
	t.Helper()
	files, err := os.ReadDir(filepath.Join(dir, "objects", "pack"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Errorf("left in objects/pack: %s", f.Name())
	}
}

// maxChain returns the longest delta chain `git verify-pack -v` reports.
func maxChain(stats string) int {
	longest := 0
	for _, line := range strings.Split(stats, "\n") {
		if rest, ok := strings.CutPrefix(line, "chain length = "); ok {
			n, _ := strconv.Atoi(rest[:strings.Index(rest, ":")])
			longest = max(longest, n)
		}
	}
	return longest
}
