package whoami_test

import (
	"context"
	"os"
	"testing"

	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/test/controlplane"
)

// TestWhoAmI asks a real API server who a client certificate's user and the
// admin kubeconfig authenticate as, and gets an error for a kubeconfig that
// is not one and for a client the API server does not know.
func TestWhoAmI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx := t.Context()
	cp := controlplane.Start(t)
	alice, err := cp.UserConfig("alice", "team")
	if err != nil {
		t.Fatal(err)
	}
	if user, err := whoami.User(ctx, alice); err != nil || user != "alice" {
		t.Errorf("User(alice) = %q, %v", user, err)
	}
	admin, err := os.ReadFile(cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := whoami.User(ctx, cp.Config)
	if err != nil || want == "" {
		t.Fatalf("User(admin) = %q, %v", want, err)
	}
	if user, err := whoami.Kubeconfig(ctx, admin); err != nil || user != want {
		t.Errorf("Kubeconfig(admin kubeconfig) = %q, %v; want %q", user, err, want)
	}
	if user, err := whoami.Kubeconfig(ctx, []byte("not a kubeconfig")); err == nil {
		t.Errorf("Kubeconfig(garbage) = %q, want an error", user)
	}
	stranger := *alice
	stranger.CertData, stranger.KeyData = nil, nil
	if user, err := whoami.User(context.Background(), &stranger); err == nil {
		t.Errorf("User(no credentials) = %q, want an error", user)
	}
}
