package reconciler

import (
	"math/big"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSliceWatchKeepsUnrecorded: what the watch saw for a consumer is taken
// once by the round that records it; what a failed write gives back is seen
// again, without hiding a newer certificate of the same slice; a slice with
// no certificate of its consumer is not noted nor its peering marked.
func TestSliceWatchKeepsUnrecorded(t *testing.T) {
	var marked []string
	w := newSliceWatch(nil, func(c ...string) { marked = append(marked, c...) })
	w.note(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": "liqo-tenant-c1", "name": "s0",
		"labels": map[string]any{"liqo.io/replicated": "true", "liqo.io/originID": "c1"}}}})
	if len(marked) != 0 || w.take("c1") != nil {
		t.Fatalf("a slice without a certificate was noted: marked %v", marked)
	}
	cert := func(serial int64) []byte { return big.NewInt(serial).Bytes() } // stands for a PEM certificate
	w.seen["c1"] = map[string][]byte{"s1": cert(1)}
	taken := w.take("c1")
	if len(taken) != 1 || w.take("c1") != nil {
		t.Fatalf("take = %v, then not empty", taken)
	}
	w.seen["c1"] = map[string][]byte{"s1": cert(2), "s2": cert(3)} // seen during the failed write
	w.putBack("c1", taken)
	got := w.take("c1")
	if len(got) != 2 || got["s1"][0] != 2 || got["s2"][0] != 3 {
		t.Errorf("after putBack: %v, want s1's newer certificate 2 and s2's 3", got)
	}
	var none *sliceWatch // a reconciler not set up with a manager
	none.start()
	if none.take("c1") != nil || slices.Contains(marked, "c1") {
		t.Error("a nil watch saw something")
	}
}
