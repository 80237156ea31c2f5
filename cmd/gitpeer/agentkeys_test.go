package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/examples/repofixture"
)

// TestLoadAgentKeys: --agent-key reads SSH public keys in authorized_keys
// format (as in the spec.verify Secret); a file without a key, or missing,
// is an error, never "no key".
func TestLoadAgentKeys(t *testing.T) {
	key, err := repofixture.NewAgentKey()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, empty := write("agent.pub", key.AuthorizedKey), write("empty.pub", []byte("\n"))
	if keys, err := loadAgentKeys(nil); keys != nil || err != nil {
		t.Fatalf("no flag: %v, %v", keys, err)
	}
	if keys, err := loadAgentKeys([]string{good}); err != nil || len(keys.SSH) != 1 {
		t.Fatalf("%s: %v, %+v", good, err, keys)
	}
	for _, files := range [][]string{{empty}, {filepath.Join(dir, "missing.pub")}, {write("bad.pub", []byte("ssh-ed25519 !!!"))}} {
		if _, err := loadAgentKeys(files); err == nil || !strings.Contains(err.Error(), "--agent-key") {
			t.Errorf("%v: %v, want an --agent-key error", files, err)
		}
	}
}
