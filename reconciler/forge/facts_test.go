package forge

import (
	"os"

	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// testTerms quotes testdata/terms.yaml, the terms provider hub publishes (hub/terms.yaml): the
// golden descriptions fail when what they say a merge grants differs from it.
func testTerms() *Terms {
	data, err := os.ReadFile("testdata/terms.yaml")
	if err != nil {
		panic(err)
	}
	terms, err := protocol.DecodeTerms("hub", data)
	if err != nil {
		panic(err)
	}
	return QuoteTerms(terms, protocol.TermsPath("hub"))
}

// testFacts is the proposal the fixtures describe: consumer edge-1 asks provider hub.
func testFacts() Facts {
	return Facts{
		Consumer: "edge-1", Provider: "hub",
		KeyFingerprint:  "3f1c5a8e9b2d4c6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f",
		NonceDigest:     "b5d2e1f0a9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2",
		TenantNamespace: "liqo-tenant-edge-1", BaseCommit: "9fceb02d0ae598e95dc970b74767f19372d61af8", Path: "hub/edge-1",
		Terms:      testTerms(),
		CheckedRef: "6dcb09b5b57875f334f61aebed695e2e4193db5e",
		Checks:     []string{"passed: tenant.yaml is signed over nonce.yaml by the key of request.yaml; CSR for CN=edge-1, O=liqo.io"},
	}
}

// previousFacts is the proposal before the provider rotated its nonce.
func previousFacts() Facts {
	f := testFacts()
	f.NonceDigest = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
	return f
}
