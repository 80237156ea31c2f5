package provider

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/vocabulary"
)

// revocationSummary is summary with what each revocation action acts on.
func revocationSummary(p Plan) string {
	var out []string
	for _, a := range p.Actions {
		switch a := a.(type) {
		case RecordLiqoCertificates:
			var certs []string
			for _, c := range a.Checked.ControlPlane {
				certs = append(certs, c.SerialNumber.Text(16))
			}
			for _, c := range a.Checked.Slices {
				certs = append(certs, c.Slice+"="+c.Cert.SerialNumber.Text(16))
			}
			out = append(out, fmt.Sprintf("RecordLiqoCertificates %v", certs))
		case DeleteReplicated:
			var objs []string
			for _, o := range a.Objects {
				objs = append(objs, o.Kind+" "+o.Namespace+"/"+o.Name)
			}
			out = append(out, fmt.Sprintf("DeleteReplicated %v", objs))
		case DeleteLiqoCaches:
			out = append(out, fmt.Sprintf("DeleteLiqoCaches %v", a.Names))
		case DeleteSliceCaches:
			out = append(out, fmt.Sprintf("DeleteSliceCaches %v", a.Slices))
		case DeleteOwned:
			out = append(out, fmt.Sprintf("DeleteOwned %v", a.DeleteNamespace))
		default:
			out = append(out, summary(Plan{Actions: []Action{a}}))
		}
	}
	return strings.Join(out, "; ")
}

func pemOf(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// TestPlanRevocation: every case of revoking a consumer, in Liqo's order:
// the certificates found recorded before they are marked revoked, the drain
// (in every tenant namespace, what stands elsewhere reported), what the
// PeeringRepository owns, the caches; the revocation ends, or waits for the
// slices to go, for Liqo to unbind the consumer and for what was drained.
func TestPlanRevocation(t *testing.T) {
	const c, ns = "c", "liqo-tenant-c"
	now := time.Now()
	ca, other := newTestCA(t), newTestCA(t)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	controlPlane := issue(t, &ca, 10, c, []string{"liqo.io"})
	slice1 := issue(t, &ca, 11, SliceCommonName("s1", c), []string{c})
	goneSlice := issue(t, &ca, 12, SliceCommonName("gone", c), []string{c})
	foreign := issue(t, &other, 13, c, []string{"liqo.io"})
	otherConsumers := issue(t, &ca, 14, SliceCommonName("s9", "d"), []string{"d"})
	sliceObj := func(ns, name string, cert *x509.Certificate) LiqoObject {
		o := LiqoObject{Kind: "ResourceSlice", Namespace: ns, Name: name, UID: "u-" + name}
		if cert != nil {
			o.Certificate = pemOf(cert)
		}
		return o
	}
	nsMap := func(ns, name string, finalizers bool) LiqoObject {
		return LiqoObject{Kind: "NamespaceMap", Namespace: ns, Name: name, UID: "u-" + name, Finalizers: finalizers}
	}
	renew := LiqoObject{Kind: "Renew", Namespace: ns, Name: "controlplane-p", UID: "u-renew"}
	recorded := func(slices ...string) vocabulary.ConsumerRecords {
		var r vocabulary.ConsumerRecords
		for i, s := range slices {
			r.Certificates = append(r.Certificates, vocabulary.IssuedRecord{Serial: fmt.Sprint(100 + i), NotAfter: now.Add(time.Hour), ResourceSlice: s})
		}
		return r
	}
	full := make([]string, MaxSliceCertificates)
	for i := range full {
		full[i] = fmt.Sprintf("old-%d", i)
	}
	unbind := "waiting for Liqo to unbind c (RoleBinding liqo-tenant-c/liqo-binding-liqo-remote-controlplane)"
	for name, tc := range map[string]struct {
		snap        RevocationSnapshot
		want        string
		wantErr     string // "": the revocation ends
		wantMessage string
	}{
		"standalone, nothing of Liqo's": {
			snap: RevocationSnapshot{Bound: []string{"ignored: no Liqo to wait for"}},
			want: "MarkRevoked; DeleteOwned false",
		},
		"standalone, the namespace deleted too": {
			snap: RevocationSnapshot{DeleteNamespace: true},
			want: "MarkRevoked; DeleteOwned true",
		},
		"standalone, Liqo's objects found: drained, and the revocation waits for Liqo to unbind": {
			snap:    RevocationSnapshot{Replicated: []LiqoObject{nsMap(ns, "m", false)}, Bound: []string{"liqo-binding-liqo-remote-controlplane"}},
			want:    "MarkRevoked; DeleteReplicated [NamespaceMap liqo-tenant-c/m]; DeleteOwned false",
			wantErr: unbind,
		},
		"standalone, Liqo's objects found, unbound: drained, and done once they go without finalizers": {
			snap: RevocationSnapshot{Replicated: []LiqoObject{nsMap(ns, "m", false)}},
			want: "MarkRevoked; DeleteReplicated [NamespaceMap liqo-tenant-c/m]; DeleteOwned false",
		},
		"standalone, a Renew left: deleted once unbound": {
			snap: RevocationSnapshot{Renews: []LiqoObject{renew}},
			want: "MarkRevoked; DeleteOwned false; DeleteReplicated [Renew liqo-tenant-c/controlplane-p]",
		},
		"Liqo mode, bound: every certificate recorded, then revoked, drained, the Tenant and caches deleted; the Renews stay": {
			snap: RevocationSnapshot{Liqo: true, Tenant: true, TenantCertificate: pemOf(controlPlane), Roots: roots,
				Replicated: []LiqoObject{nsMap(ns, "m", true)}, Renews: []LiqoObject{renew},
				Caches: []LiqoCache{{Certificate: pemOf(controlPlane)}}, Bound: []string{"liqo-binding-liqo-remote-controlplane"}},
			want:    "RecordLiqoCertificates [a a]; MarkRevoked; DeleteReplicated [NamespaceMap liqo-tenant-c/m]; DeleteOwned false; DeleteLiqoCaches [liqo-remote-certificate]",
			wantErr: unbind,
		},
		"Liqo mode, its Tenant present, not bound yet: waits for Liqo to unbind": {
			snap:    RevocationSnapshot{Liqo: true, Tenant: true},
			want:    "MarkRevoked; DeleteOwned false",
			wantErr: "waiting for Liqo to unbind c (its Tenant liqo-tenant-c/c is deleted now)",
		},
		"Liqo mode, unbound: the Renews go, and it ends": {
			snap: RevocationSnapshot{Liqo: true, Renews: []LiqoObject{renew}},
			want: "MarkRevoked; DeleteOwned false; DeleteReplicated [Renew liqo-tenant-c/controlplane-p]",
		},
		"Liqo mode, a slice present: its certificate recorded by name, its cache waits for it to go": {
			snap: RevocationSnapshot{Liqo: true, Roots: roots, Replicated: []LiqoObject{sliceObj(ns, "s1", slice1)},
				Caches: []LiqoCache{{Slice: "s1", Certificate: pemOf(slice1)}}},
			want:    "RecordLiqoCertificates [s1=b s1=b]; MarkRevoked; DeleteReplicated [ResourceSlice liqo-tenant-c/s1]; DeleteOwned false",
			wantErr: "ResourceSlices liqo-tenant-c/[s1] of c deleted: their certificate caches go",
		},
		"Liqo mode, slices gone: the certificate in a gone slice's cache recorded, the caches of recorded slices deleted": {
			snap: RevocationSnapshot{Liqo: true, Roots: roots, Records: recorded("earlier"),
				Watched: map[string][]byte{"gone": pemOf(goneSlice)}, Caches: []LiqoCache{{Slice: "gone", Certificate: pemOf(goneSlice)}}},
			want: "RecordLiqoCertificates [gone=c gone=c]; MarkRevoked; DeleteOwned false; DeleteSliceCaches [earlier gone]",
		},
		"Liqo mode, created during the revocation: unbound now, drained, waits for what lingers": {
			snap:    RevocationSnapshot{Liqo: true, Replicated: []LiqoObject{nsMap(ns, "late-1", true), nsMap(ns, "late-2", false)}, Renews: []LiqoObject{renew}},
			want:    "MarkRevoked; DeleteReplicated [NamespaceMap liqo-tenant-c/late-1 NamespaceMap liqo-tenant-c/late-2]; DeleteOwned false",
			wantErr: "c created 1 ResourceSlice(s) or NamespaceMap(s) in liqo-tenant-c while it was being revoked: revoking them too",
		},
		"in another consumer's tenant namespace: drained; outside tenant namespaces: reported": {
			snap: RevocationSnapshot{Liqo: true, Roots: roots, Replicated: []LiqoObject{
				sliceObj("liqo-tenant-d", "s9", otherConsumers), nsMap("liqo-tenant-d", "m", false), nsMap("default", "m", false)}},
			want:        "Event LiqoCertificateIgnored; MarkRevoked; DeleteReplicated [ResourceSlice liqo-tenant-d/s9 NamespaceMap liqo-tenant-d/m]; Event LiqoObjectsOutsideTenantNamespaces; DeleteOwned false",
			wantMessage: "NamespaceMap default/m, labelled as replicated from c, stand(s) outside tenant namespaces",
		},
		"a certificate that is not Liqo's: reported, not recorded": {
			snap: RevocationSnapshot{Liqo: true, Roots: roots, Caches: []LiqoCache{{Certificate: pemOf(foreign)}, {Slice: "x", Certificate: []byte("not PEM")}}},
			want: "Event LiqoCertificateIgnored; MarkRevoked; DeleteOwned false; DeleteLiqoCaches [liqo-remote-certificate]",
		},
		"over the cap: reported, not recorded": {
			snap: RevocationSnapshot{Liqo: true, Roots: roots, Records: recorded(full...), Watched: map[string][]byte{"s1": pemOf(slice1)}},
			want: "Event SliceCertificatesOverCap; MarkRevoked; DeleteOwned false; DeleteSliceCaches [" + strings.Join(sortedCopy(full), " ") + "]",
		},
		"recorded already: no write": {
			snap: RevocationSnapshot{Liqo: true, Roots: roots, TenantCertificate: pemOf(controlPlane),
				Records: vocabulary.ConsumerRecords{Certificates: []vocabulary.IssuedRecord{{Serial: "a", NotAfter: controlPlane.NotAfter}}}},
			want: "MarkRevoked; DeleteOwned false",
		},
	} {
		t.Run(name, func(t *testing.T) {
			tc.snap.Consumer, tc.snap.Namespace = c, ns
			p := PlanRevocation(tc.snap, now)
			if got := revocationSummary(p); got != tc.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tc.want)
			}
			switch err := p.Outcome.Err; {
			case tc.wantErr == "" && err != nil:
				t.Errorf("waits: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("outcome %v, want it to wait: %s", err, tc.wantErr)
			}
			if !strings.Contains(p.Outcome.Message, tc.wantMessage) || (tc.wantMessage == "") != (p.Outcome.Message == "") {
				t.Errorf("message %q, want %q", p.Outcome.Message, tc.wantMessage)
			}
			for _, a := range p.Actions {
				if e, ok := a.(Event); ok && (!e.Warning || e.About != c) {
					t.Errorf("event %+v", e)
				}
			}
		})
	}
}

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }
