package reconciler

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// TestForEachAtOnce: every index is done once, by workers running at once and never more.
func TestForEachAtOnce(t *testing.T) {
	const n, workers = 40, 4
	var mu sync.Mutex
	running, most := 0, 0
	var started sync.WaitGroup
	started.Add(workers)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	done := make([]int, n)
	forEachAtOnce(n, workers, func(i int) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		defer func() {
			mu.Lock()
			running--
			mu.Unlock()
		}()
		if i < workers {
			// The first calls wait for one another: they must run at once.
			started.Done()
			select {
			case <-all:
			case <-time.After(time.Minute):
				t.Errorf("call %d: the first %d calls did not run at once", i, workers)
			}
		}
		done[i]++
	})
	for i, d := range done {
		if d != 1 {
			t.Errorf("index %d done %d times", i, d)
		}
	}
	if most > workers {
		t.Errorf("%d calls at once, want at most %d", most, workers)
	}
	forEachAtOnce(3, 0, func(i int) { done[i]++ }) // zero workers: one
	if done[0] != 2 || done[2] != 2 {
		t.Errorf("zero workers: %v", done[:3])
	}
}

// TestInRoundOrder: the steps staged by peerings running at once are
// committed in the round's order of consumers, each peering's in its own order.
func TestInRoundOrder(t *testing.T) {
	step := func(consumer, subject string) gitStep {
		return gitStep{key: resultKey(gitpeerv1alpha1.ProviderRole, consumer), msg: protocol.Message{Subject: subject}}
	}
	steps := []gitStep{step("c3", "c3"), step("c1", "c1 first"), step("c2", "c2"), step("c1", "c1 second")}
	inRoundOrder(steps, []string{"c1", "c2", "c3"})
	var got []string
	for _, st := range steps {
		got = append(got, st.msg.Subject)
	}
	if want := "c1 first, c1 second, c2, c3"; strings.Join(got, ", ") != want {
		t.Fatalf("got %s, want %s", strings.Join(got, ", "), want)
	}
}

// TestProvideRecovering: a peering step that panics fails its peering with
// the panic, and the agent goes on.
func TestProvideRecovering(t *testing.T) {
	s := sessionOf(&PeeringRepositoryReconciler{}, &gitpeerv1alpha1.PeeringRepository{})
	// Maintain without the Tenant it needs: a nil dereference.
	p := providing{pe: &protocol.Documents{Provider: "p", Consumer: "c"}, step: provider.Maintain}
	o := s.provideRecovering(context.Background(), "c", func() outcome { return s.providerStep().provide(context.Background(), p) })
	if o.err == nil || !strings.Contains(o.err.Error(), "panic") {
		t.Fatalf("outcome %+v, want the panic as its error", o)
	}
}
