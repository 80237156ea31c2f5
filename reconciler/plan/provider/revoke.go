package provider

import (
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Revoking a consumer takes back everything issued or bound for it, in
// Liqo's order (PlanRevocation): every certificate is recorded and marked
// revoked; the consumer is drained as Liqo's Drained drains it; what the
// PeeringRepository created for it goes (its Tenant, whose deletion makes Liqo
// unbind it); then Liqo's certificate caches; last, once Liqo unbound it, the
// Renews Liqo's CRD replicator created for it. Without Liqo there is nothing
// to drain and no cache to delete.

// RevocationSnapshot is what revoking a consumer reads: plain data.
type RevocationSnapshot struct {
	// Consumer is the consumer revoked; Namespace its tenant namespace.
	Consumer, Namespace string
	// Liqo: the agent runs in Liqo mode.
	Liqo bool
	// DeleteNamespace is spec.provider.deleteNamespaceOnRevoke.
	DeleteNamespace bool
	// Tenant: the PeeringRepository's Tenant of the consumer exists;
	// TenantCertificate is the certificate in its status (nil if none).
	Tenant            bool
	TenantCertificate []byte
	// Watched are the certificates of the consumer's ResourceSlices the
	// slice watch saw and no round recorded yet, by slice.
	Watched map[string][]byte
	// Records are what the provider remembers of the consumer.
	Records vocabulary.ConsumerRecords
	// Replicated are the ResourceSlices, then the NamespaceMaps, Liqo's CRD
	// replicator created for the consumer, in every namespace, as Liqo's
	// Drained lists them (LiqoDrainSelector).
	Replicated []LiqoObject
	// Renews are the Renews it created for the consumer in Namespace.
	Renews []LiqoObject
	// Caches are Liqo's certificate caches of the consumer that exist in
	// Namespace: the control plane's, those of its slices there and of the
	// slices the records name.
	Caches []LiqoCache
	// Roots are the CAs the API server accepts client certificates from,
	// read when a certificate was found.
	Roots *x509.CertPool
	// Bound names the RoleBindings in Namespace naming the consumer (a User
	// or a Group) that the PeeringRepository does not own: Liqo's.
	Bound []string
}

// LiqoObject is one object of Liqo's found for a consumer.
type LiqoObject struct {
	Kind, Namespace, Name, UID string
	// Finalizers: it has some, and outlives its deletion until they are removed.
	Finalizers bool
	// Certificate is the PEM certificate in the status of a ResourceSlice (SliceCertificate), nil if none.
	Certificate []byte
}

// LiqoCache is one of Liqo's certificate caches: the one of the ResourceSlice
// Slice, or of the control plane when Slice is "", holding Certificate.
type LiqoCache struct {
	Slice       string
	Certificate []byte
}

// Name is the name of the cache's Secret.
func (c LiqoCache) Name() string {
	if c.Slice == "" {
		return LiqoCertificateCache
	}
	return LiqoCertificateCache + "-" + c.Slice
}

// LiqoFound is a PEM certificate found where Liqo keeps what it issued for a
// consumer: for the ResourceSlice Slice, or its control plane when Slice is "".
type LiqoFound struct {
	Slice string
	PEM   []byte
}

// LiqoChecked are the certificates of LiqoFound that Liqo issued to the
// consumer (CheckLiqoFound): the control plane's and the slices', and why
// the others are not.
type LiqoChecked struct {
	ControlPlane []*x509.Certificate
	Slices       []SliceCert
	Ignored      []error
}

// CheckLiqoFound checks each certificate of found to be one Liqo issued to
// consumer at now (CheckLiqoIssued against roots). One that does not parse
// is no certificate anyone could use, and is left out silently.
func CheckLiqoFound(found []LiqoFound, roots *x509.CertPool, consumer string, now time.Time) LiqoChecked {
	var out LiqoChecked
	for _, f := range found {
		cert, err := crypto.ParseCertificatePEM(f.PEM)
		if err != nil {
			continue
		}
		switch err := CheckLiqoIssued(cert, roots, consumer, f.Slice, now); {
		case err != nil:
			out.Ignored = append(out.Ignored, err)
		case f.Slice == "":
			out.ControlPlane = append(out.ControlPlane, cert)
		default:
			out.Slices = append(out.Slices, SliceCert{Slice: f.Slice, Cert: cert})
		}
	}
	return out
}

// WithLiqoChecked adds the certificates of c to records, a slice's within
// MaxSliceCertificates (WithSliceCertificates); it returns the records,
// whether they changed, and the slices the cap left out.
func WithLiqoChecked(records []vocabulary.IssuedRecord, c LiqoChecked) (out []vocabulary.IssuedRecord, changed bool, over []string) {
	out = records
	for _, cert := range c.ControlPlane {
		var added bool
		out, added = vocabulary.WithIssued(out, cert.SerialNumber.Text(16), cert.NotAfter)
		changed = changed || added
	}
	out, added, over := WithSliceCertificates(out, c.Slices)
	return out, changed || added, over
}

// IgnoredEvent reports err, why a certificate found for consumer is not recorded.
func IgnoredEvent(consumer string, err error) Event {
	return Event{Warning: true, Reason: vocabulary.ReasonLiqoCertificateIgnored, About: consumer, Message: fmt.Sprintf(
		"not recorded: %v (a certificate Liqo did not issue to %s, put in a ResourceSlice's status or a Secret of its tenant namespace)", err, consumer)}
}

// OverCapEvent reports the certificates of the ResourceSlices over, of consumer, that the cap left out of its records.
func OverCapEvent(consumer string, over []string) Event {
	return Event{Warning: true, Reason: vocabulary.ReasonSliceCertificatesOverCap, About: consumer, Message: fmt.Sprintf(
		"the certificates Liqo issued for ResourceSlices %s of %s are not recorded: its records hold %d slice certificates already; a revocation neither marks them revoked nor deletes their caches liqo-remote-certificate-<slice> once the slices are gone: delete those by hand",
		strings.Join(over, ", "), consumer, MaxSliceCertificates)}
}

// RecordLiqoCertificates records Checked, certificates Liqo issued to the
// consumer (CheckLiqoFound), in one write.
type RecordLiqoCertificates struct{ Checked LiqoChecked }

// MarkRevoked marks every certificate in the consumer's records revoked.
type MarkRevoked struct{}

// DeleteReplicated deletes Objects, each only if it is still the object
// observed (its UID): absent ones are gone already.
type DeleteReplicated struct{ Objects []LiqoObject }

// DeleteOwned deletes what the PeeringRepository created for the consumer:
// its Tenant, RoleBindings, nonce and CSRs, and its tenant namespace if
// DeleteNamespace and the agent created it.
type DeleteOwned struct{ DeleteNamespace bool }

// DeleteLiqoCaches deletes Liqo's certificate caches Names in the tenant namespace.
type DeleteLiqoCaches struct{ Names []string }

// DeleteSliceCaches deletes the caches of the ResourceSlices Slices, which
// the records name and which are gone, then clears those names in the
// records: their certificates stay recorded.
type DeleteSliceCaches struct{ Slices []string }

func (RecordLiqoCertificates) action() {}
func (MarkRevoked) action()            {}
func (DeleteReplicated) action()       {}
func (DeleteOwned) action()            {}
func (DeleteLiqoCaches) action()       {}
func (DeleteSliceCaches) action()      {}

// inTenantNamespace reports whether ns is a tenant namespace (liqo-tenant-*),
// where the admission policy lets the agent delete Liqo's objects.
func inTenantNamespace(ns string) bool {
	return strings.HasPrefix(ns, authv1beta1.TenantNamespacePrefix)
}

// PlanRevocation plans revoking s.Consumer at now, in Liqo's order: every
// certificate found is recorded (the one in its Tenant's status, as Liqo may
// have renewed it since the last round; those the slice watch saw; those in
// the status of its ResourceSlices and in Liqo's caches: CheckLiqoFound) and
// every recorded one marked revoked, before what it protects goes; the
// consumer is drained as Liqo's Drained drains it, in every tenant namespace
// (liqotech/liqo v1.2.0
// pkg/liqo-controller-manager/authentication/tenant-controller/tenant_controller.go,
// handleTenantDrained, lists in every namespace with
// pkg/utils/labels/labelSelectors.go, RemoteLabelSelectorForCluster): its
// ResourceSlices and NamespaceMaps go, and with them Liqo's bindings of
// Group <consumer> in offloaded namespaces; those found outside tenant
// namespaces, which the agent may not delete, are reported. Then what the
// PeeringRepository created goes (DeleteOwned), then Liqo's control-plane
// certificate cache, or a new peering would get a revoked certificate back
// from it, and the cache of each recorded slice that is gone (Liqo writes it
// again while the slice exists).
//
// The revocation is done when its actions succeed, unless it waits: for
// recorded slices to go (their caches then), and, in Liqo mode or when Liqo's
// objects were found, for Liqo to unbind the consumer, which until then may
// create again what the drain deleted, and for what was drained to be gone.
// Once unbound, the Renews the CRD replicator created go last (bound, it
// would create them again at once). A waiting plan's outcome is an error:
// the revocation is tried again; an ending one has only a Message, saying
// what was found outside tenant namespaces ("" when nothing was).
func PlanRevocation(s RevocationSnapshot, now time.Time) Plan {
	var p Plan
	var drained, elsewhere []LiqoObject
	for _, obj := range s.Replicated {
		if inTenantNamespace(obj.Namespace) {
			drained = append(drained, obj)
		} else {
			elsewhere = append(elsewhere, obj)
		}
	}
	present := presentSlices(drained, s.Namespace)

	checked := CheckLiqoFound(s.found(drained), s.Roots, s.Consumer, now)
	for _, err := range checked.Ignored {
		p.add(IgnoredEvent(s.Consumer, err))
	}
	records, changed, over := WithLiqoChecked(s.Records.Certificates, checked)
	if changed {
		p.add(RecordLiqoCertificates{Checked: checked})
	}
	if len(over) > 0 {
		p.add(OverCapEvent(s.Consumer, over))
	}
	p.add(MarkRevoked{})
	if len(drained) > 0 {
		p.add(DeleteReplicated{Objects: drained})
	}
	if len(elsewhere) > 0 {
		p.Outcome.Message = elsewhereNote(s.Consumer, elsewhere)
		p.add(Event{Warning: true, Reason: vocabulary.ReasonLiqoObjectsOutsideTenantNamespaces, About: s.Consumer, Message: p.Outcome.Message})
	}
	p.add(DeleteOwned{DeleteNamespace: s.DeleteNamespace})
	if slices.ContainsFunc(s.Caches, func(c LiqoCache) bool { return c.Slice == "" }) {
		p.add(DeleteLiqoCaches{Names: []string{LiqoCertificateCache}})
	}
	if gone := SliceCachesToDelete(records, present); len(gone) > 0 {
		p.add(DeleteSliceCaches{Slices: gone})
	}
	if err := s.waiting(records, present, drained); err != nil {
		p.Outcome = Outcome{Err: err}
		return p
	}
	if len(s.Renews) > 0 {
		p.add(DeleteReplicated{Objects: s.Renews})
	}
	return p
}

// found lists the certificates of the consumer found where Liqo keeps what
// it issued: its Tenant's status, the slice watch, the status of the
// ResourceSlices among drained, and its caches.
func (s RevocationSnapshot) found(drained []LiqoObject) []LiqoFound {
	var out []LiqoFound
	if s.TenantCertificate != nil {
		out = append(out, LiqoFound{PEM: s.TenantCertificate})
	}
	out = append(out, WatchedFound(s.Watched)...)
	for _, obj := range drained {
		if obj.Certificate != nil {
			out = append(out, LiqoFound{Slice: obj.Name, PEM: obj.Certificate})
		}
	}
	for _, c := range s.Caches {
		out = append(out, LiqoFound{Slice: c.Slice, PEM: c.Certificate})
	}
	return out
}

// waiting says what the revocation waits for before it ends, given the
// records once the certificates found are in them, the consumer's slices
// present in its tenant namespace and the objects drained; nil when it ends.
func (s RevocationSnapshot) waiting(records []vocabulary.IssuedRecord, present []string, drained []LiqoObject) error {
	if waiting := WaitingSlices(records, present); len(waiting) > 0 {
		return fmt.Errorf("ResourceSlices %s/%v of %s deleted: their certificate caches go once they are gone (Liqo's ResourceSlice controller writes a cache again while its slice exists)", s.Namespace, waiting, s.Consumer)
	}
	if !s.Liqo && len(drained) == 0 && len(s.Renews) == 0 {
		return nil
	}
	switch {
	case len(s.Bound) > 0:
		return fmt.Errorf("waiting for Liqo to unbind %s (RoleBinding %s/%s): until then it may create again what its revocation deleted", s.Consumer, s.Namespace, s.Bound[0])
	case s.Liqo && s.Tenant:
		return fmt.Errorf("waiting for Liqo to unbind %s (its Tenant %s/%s is deleted now): until then it may create again what its revocation deleted", s.Consumer, s.Namespace, s.Consumer)
	}
	// Unbound, nothing new can come; what the drain deleted outlives it
	// while it has finalizers, and is seen again by the next pass.
	n, namespaces := 0, []string{}
	for _, obj := range drained {
		if obj.Finalizers {
			n++
			if !slices.Contains(namespaces, obj.Namespace) {
				namespaces = append(namespaces, obj.Namespace)
			}
		}
	}
	if n > 0 {
		return fmt.Errorf("%s created %d ResourceSlice(s) or NamespaceMap(s) in %s while it was being revoked: revoking them too", s.Consumer, n, strings.Join(namespaces, ", "))
	}
	return nil
}

// WatchedFound lists seen, the certificates the slice watch saw by slice, in slice order.
func WatchedFound(seen map[string][]byte) []LiqoFound {
	var out []LiqoFound
	for _, slice := range slices.Sorted(maps.Keys(seen)) {
		out = append(out, LiqoFound{Slice: slice, PEM: seen[slice]})
	}
	return out
}

// WaitingSlices names the ResourceSlices records name that are among
// present, the slices that still exist: their caches wait for them to go.
func WaitingSlices(records []vocabulary.IssuedRecord, present []string) []string {
	var out []string
	for _, r := range records {
		if r.ResourceSlice != "" && slices.Contains(present, r.ResourceSlice) && !slices.Contains(out, r.ResourceSlice) {
			out = append(out, r.ResourceSlice)
		}
	}
	return out
}

// presentSlices names the ResourceSlices among drained in the tenant namespace ns.
func presentSlices(drained []LiqoObject, ns string) []string {
	var out []string
	for _, obj := range drained {
		if obj.Kind == LiqoDrainedKinds[0].Kind && obj.Namespace == ns {
			out = append(out, obj.Name)
		}
	}
	return out
}

// elsewhereNote says which of Liqo's objects naming consumer as their origin
// stand outside tenant namespaces, where the agent may not delete them.
func elsewhereNote(consumer string, objs []LiqoObject) string {
	var names []string
	for _, o := range objs {
		names = append(names, fmt.Sprintf("%s %s/%s", o.Kind, o.Namespace, o.Name))
	}
	return fmt.Sprintf("%s, labelled as replicated from %s, stand(s) outside tenant namespaces (liqo-tenant-*), where gitpeer may not delete them: delete them by hand (they may keep bindings of Group %s)",
		strings.Join(names, ", "), consumer, consumer)
}
