package reconciler

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitpeer/gitpeer/apis"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/test/gitserver"
)

// TestDroppedClonesAreClosed rotates the Git credentials and changes the spec
// of one PeeringRepository many times, reading the clone after each change as
// a round does, and then deletes it: the replaced and the forgotten clones
// release their pack files, so the process holds no more file descriptors
// than after the first round. The garbage collector is off: it would close
// the files of unreachable clones at some later point, which a busy agent
// cannot count on.
func TestDroppedClonesAreClosed(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc/self/fd")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	srv := gitserver.Start(t)
	remote, err := srv.NewRepo("peering")
	if err != nil {
		t.Fatal(err)
	}
	pushCommit(t, remote.Dir)
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "git"},
		Data:       map[string][]byte{gitsync.SecretUsername: []byte(srv.Username), gitsync.SecretPassword: []byte(srv.Password)},
	}
	k8s := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(secret).Build()
	r := &PeeringRepositoryReconciler{Client: k8s, DataDir: t.TempDir(), repos: map[types.NamespacedName]*openRepo{}}
	obj := &gitpeerv1alpha1.PeeringRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "peering", UID: "uid-1"},
		Spec: gitpeerv1alpha1.PeeringRepositorySpec{
			URL: remote.HTTPURL, ClusterID: "cluster-a", SecretRef: &meta.LocalObjectReference{Name: "git"},
		},
	}
	round := func() {
		t.Helper()
		open, err := r.gitRepo(ctx, obj)
		if err != nil {
			t.Fatal(err)
		}
		repo := open.repo
		head, err := repo.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.List(head); err != nil {
			t.Fatal(err)
		}
	}
	round()
	before := openFDs(t)
	const changes = 20
	for i := range changes {
		if i%2 == 0 {
			secret.Data["rotated"] = []byte{byte(i)} // a new resourceVersion, as a rotation makes
			if err := k8s.Update(ctx, secret); err != nil {
				t.Fatal(err)
			}
		} else if obj.Spec.Path == "" {
			obj.Spec.Path = "b"
		} else {
			obj.Spec.Path = ""
		}
		round()
	}
	after := openFDs(t)
	// A leak holds at least one pack file per change; allow a little noise
	// from the HTTP connection pool.
	if after-before >= changes/2 {
		t.Errorf("open file descriptors grew from %d to %d over %d credential and spec changes: replaced clones are not closed", before, after, changes)
	}
	r.forget(client.ObjectKeyFromObject(obj))
	if gone := openFDs(t); gone >= after {
		t.Errorf("forgetting the deleted PeeringRepository left %d descriptors open (%d before): its clone is not closed", gone, after)
	}
}

// pushCommit pushes a commit with a few files to main of the bare repository dir.
func pushCommit(t *testing.T, dir string) {
	t.Helper()
	work := t.TempDir()
	for _, f := range []string{"a.yaml", "b/c.yaml"} {
		p := filepath.Join(work, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("kind: x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "files"}, {"push", "-q", dir, "HEAD:main"},
	} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
