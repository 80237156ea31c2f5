package edit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/verify"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/verdict"
	"github.com/gitpeer/gitpeer/test/sandbox"
	"github.com/gitpeer/gitpeer/vocabulary"
)

func TestRequestWritesAValidDocument(t *testing.T) {
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := crypto.MarshalPublicKeyPEM(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	priv, err := crypto.MarshalPrivateKeyPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, keyPEM := range map[string][]byte{"public": pub, "private": priv} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			out, err := Request(CheckoutDir{Checkout: dir, Root: "peers", Provider: "provider-a", Consumer: "consumer-1"}, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			want := `git add -A -- peers/provider-a/consumer-1/request.yaml && git commit -m "Request peering of consumer-1 with provider-a" -- peers/provider-a/consumer-1/request.yaml` + "\n"
			if out != want {
				t.Fatalf("commands %q, want %q", out, want)
			}
			data, err := os.ReadFile(filepath.Join(dir, "peers/provider-a/consumer-1/request.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			pe := &protocol.Documents{}
			if err := pe.Decode(protocol.Path{Provider: "provider-a", Consumer: "consumer-1", Kind: vocabulary.RequestFile}, data); err != nil {
				t.Fatal(err)
			}
			if string(pe.Request.Spec.PublicKey) != string(pub) {
				t.Fatalf("key %q, want %q", pe.Request.Spec.PublicKey, pub)
			}
		})
	}
}

func TestRequestRefuses(t *testing.T) {
	dir := t.TempDir()
	if _, err := Request(CheckoutDir{Checkout: dir, Provider: "provider-a", Consumer: "consumer-1"}, []byte("not a key")); err == nil || !strings.Contains(err.Error(), "public key") {
		t.Fatalf("bad key: %v", err)
	}
	key, _ := crypto.GenerateKey(crypto.Ed25519)
	pub, _ := crypto.MarshalPublicKeyPEM(key.Public())
	if _, err := Request(CheckoutDir{Checkout: dir, Provider: "provider-a", Consumer: "../x"}, pub); err == nil || !strings.Contains(err.Error(), "RFC 1123") {
		t.Fatalf("bad ID: %v", err)
	}
	if _, err := Request(CheckoutDir{Checkout: dir, Provider: "provider-a", Consumer: "provider-a"}, pub); err == nil {
		t.Fatal("peering with itself accepted")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("files written: %v", entries)
	}
}

func TestRevokeAndCommit(t *testing.T) {
	dir := t.TempDir()
	tenant := filepath.Join(dir, "provider-a/consumer-1/tenant.yaml")
	if err := os.MkdirAll(filepath.Dir(tenant), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tenant, []byte("t"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(script string) {
		t.Helper()
		cmd := exec.Command("sh", "-ec", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	run("git init -q -b main && git add -A && git commit -q -m init")
	p := CheckoutDir{Checkout: dir, Provider: "provider-a", Consumer: "consumer-1"}
	out, err := Revoke(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tenant); !os.IsNotExist(err) {
		t.Fatalf("tenant.yaml still there: %v", err)
	}
	if !strings.HasPrefix(out, "git switch -c revoke/provider-a/consumer-1\n") || !strings.Contains(out, "git push origin revoke/provider-a/consumer-1") {
		t.Fatalf("commands:\n%s", out)
	}
	// The printed commands, minus the push, really commit the deletion.
	run(strings.Join(strings.Split(out, "\n")[:2], "\n") + "\ntest -z \"$(git status --porcelain)\"\ngit show --stat HEAD | grep -q 'tenant.yaml'")
	if _, err := Revoke(p); err == nil || !strings.Contains(err.Error(), "nothing to revoke") {
		t.Fatalf("second revoke: %v", err)
	}
}

// TestRevokeKustomizedDirectory checks that revoke drops tenant.yaml from a
// kustomization.yaml beside it, deleting a kustomization left with nothing to
// build, and that verify then reads the directory as revoking.
func TestRevokeKustomizedDirectory(t *testing.T) {
	const dir = "provider-a/consumer-1/"
	drain := "patches:\n- target: {kind: Tenant}\n  patch: '[{\"op\": \"add\", \"path\": \"/spec/tenantCondition\", \"value\": \"Drained\"}]'\n"
	for _, tc := range []struct {
		name, kustomization string
		want                string // the kustomization after revoke; "" when deleted
	}{
		{name: "drain pattern", kustomization: "# drained by the admin\nresources:\n- tenant.yaml\n" + drain},
		{name: "dot path", kustomization: "resources: [./tenant.yaml]\n" + drain},
		{name: "other resources kept", kustomization: "resources:\n  - tenant.yaml\n  - identity.yaml # kept\n",
			want: "resources:\n  - identity.yaml # kept\n"},
		{name: "components kept", kustomization: "resources: [tenant.yaml]\ncomponents: [c]\n", want: "resources: []\ncomponents: [c]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			ca, err := repofixture.NewCA("provider-a CA", now.Add(-time.Hour), 24*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			pe, err := repofixture.Build("provider-a", "consumer-1", repofixture.Issued,
				repofixture.Options{CA: ca, APIServer: "https://provider-a.example:6443", NotBefore: now.Add(-time.Minute), TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			if err := pe.WriteTo(root); err != nil {
				t.Fatal(err)
			}
			terms, err := repofixture.Terms("provider-a")
			if err != nil {
				t.Fatal(err)
			}
			if err := repofixture.Write(root, "provider-a/terms.yaml", terms); err != nil {
				t.Fatal(err)
			}
			if err := repofixture.Write(root, dir+"kustomization.yaml", []byte(tc.kustomization)); err != nil {
				t.Fatal(err)
			}
			out, err := Revoke(CheckoutDir{Checkout: root, Provider: "provider-a", Consumer: "consumer-1"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "git add -A -- "+dir+"tenant.yaml "+dir+"kustomization.yaml && ") {
				t.Fatalf("commands do not commit both files:\n%s", out)
			}
			got, err := os.ReadFile(filepath.Join(root, dir+"kustomization.yaml"))
			switch {
			case tc.want == "" && !os.IsNotExist(err):
				t.Fatalf("kustomization.yaml kept (%v):\n%s", err, got)
			case tc.want != "" && string(got) != tc.want:
				t.Fatalf("kustomization.yaml:\n%s\nwant:\n%s", got, tc.want)
			}
			if tc.name == "components kept" {
				return // component c does not exist: only the edit is checked
			}
			// verify reads commits, not working trees: commit what revoke left.
			for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "revoke"}} {
				if out, err := sandbox.Git(root, args...); err != nil {
					t.Fatal(out, err)
				}
			}
			results, err := resultsOf(verify.Check(root, verify.Options{Now: now}))
			if err != nil {
				t.Fatal(err)
			}
			var verdict string
			for _, r := range results {
				if !r.Valid {
					t.Errorf("%s invalid: %s", r.Path, r.Reason)
				}
				if r.Path == dir {
					verdict = r.Reason
				}
			}
			if !strings.HasPrefix(verdict, "directory revokes") {
				t.Fatalf("verdict %q, want the directory to revoke", verdict)
			}
		})
	}
}

// resultsOf is the results of a verify.Check.
func resultsOf(rep verify.Report, err error) ([]verdict.Result, error) { return rep.Results, err }
