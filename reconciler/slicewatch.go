package reconciler

import (
	"context"
	"maps"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
)

// sliceWatch sees, in Liqo mode, each certificate Liqo's remote
// ResourceSlice controller issues for a consumer's ResourceSlice (its
// status.authParams), so that the provider records it (recordWatchedSlices)
// while the slice exists: Liqo never deletes a slice's certificate cache when
// the slice goes, and a revocation must still mark its certificate revoked
// and delete that cache. It watches only the slices Liqo's CRD replicator
// created (provider.LiqoReplicatedSelector) and keeps of each event only the
// certificate, until a round records it: the rounds read nothing per slice.
// It starts at the first Liqo-mode peering a round issues (observeLiqo: Liqo's
// CRDs exist then) and runs until the manager stops.
type sliceWatch struct {
	config *rest.Config
	// noteChanged marks a consumer's peering for the next round (providerRounds.noteChanged).
	noteChanged func(consumers ...string)
	once        sync.Once
	started     chan struct{}

	mu   sync.Mutex
	seen map[string]map[string][]byte // consumer -> slice -> PEM certificate, not yet recorded
}

func newSliceWatch(config *rest.Config, noteChanged func(...string)) *sliceWatch {
	return &sliceWatch{config: config, noteChanged: noteChanged, started: make(chan struct{}), seen: map[string]map[string][]byte{}}
}

// start makes Start watch; only the first call counts (observeLiqo calls it). A nil watch (a
// reconciler not set up with a manager) does nothing.
func (w *sliceWatch) start() {
	if w != nil {
		w.once.Do(func() { close(w.started) })
	}
}

// Start waits for start, then watches the ResourceSlices until ctx ends
// (a manager.Runnable).
func (w *sliceWatch) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-w.started:
	}
	client, err := dynamic.NewForConfig(w.config)
	if err != nil {
		return err
	}
	gvk := provider.LiqoDrainedKinds[0]
	informer := dynamicinformer.NewFilteredDynamicInformer(client, gvk.GroupVersion().WithResource(provider.ResourceSlicesResource),
		metav1.NamespaceAll, 0, toolscache.Indexers{}, func(o *metav1.ListOptions) { o.LabelSelector = provider.LiqoReplicatedSelector }).Informer()
	// The store keeps only what identifies a slice: a slice's CSR and
	// certificate are noted in the handler, not held for the agent's lifetime.
	if err := informer.SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			w.note(u)
			trimmed := &unstructured.Unstructured{}
			trimmed.SetGroupVersionKind(u.GroupVersionKind())
			trimmed.SetNamespace(u.GetNamespace())
			trimmed.SetName(u.GetName())
			trimmed.SetResourceVersion(u.GetResourceVersion())
			return trimmed, nil
		}
		return obj, nil
	}); err != nil {
		return err
	}
	log.FromContext(ctx).Info("watching Liqo's ResourceSlices to record the certificates Liqo issues for them")
	informer.Run(ctx.Done())
	return nil
}

// note remembers the certificate of slice, if Liqo issued one for a consumer
// (provider.SliceIssued), and marks the consumer's peering for the next round.
func (w *sliceWatch) note(slice *unstructured.Unstructured) {
	consumer, cert := provider.SliceIssued(slice)
	if consumer == "" {
		return
	}
	w.mu.Lock()
	if w.seen[consumer] == nil {
		w.seen[consumer] = map[string][]byte{}
	}
	w.seen[consumer][slice.GetName()] = cert
	w.mu.Unlock()
	w.noteChanged(consumer)
}

// take returns and forgets the certificates seen for consumer's slices.
func (w *sliceWatch) take(consumer string) map[string][]byte {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen[consumer]
	delete(w.seen, consumer)
	return out
}

// putBack returns what take returned and was not recorded, without
// replacing what was seen since.
func (w *sliceWatch) putBack(consumer string, certs map[string][]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	newer := w.seen[consumer]
	w.seen[consumer] = maps.Clone(certs)
	maps.Copy(w.seen[consumer], newer)
}
