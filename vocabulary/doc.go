// Package vocabulary holds the names gitpeer writes into the cluster and into
// peering repositories: labels, annotations, event reasons, CSR condition
// reasons, commit trailers and actions, document file names, and the records
// format. They are a wire format: users' selectors, alerts and scripts,
// other versions of the agent, `gitpeer verify`, `audit` and `records` read
// them, so a rename breaks them (TestWireVocabulary pins every one).
//
// The rule: every such name is defined once, here, and every package uses it
// from here, without re-exports. The exception is the API: the names that are
// part of the PeeringRepository API (its condition types and reasons, which
// are also the agent's event reasons, its finalizer and the annotations a
// person sets on it) stay in apis/gitpeer/v1alpha1, which imports nothing of
// gitpeer's, and are not repeated here. Liqo's own names stay in
// apis/authentication/v1beta1.
//
// The package sits at the module root, outside reconciler/, so the
// command-line tools read and write the same names without importing the
// controller. It imports only the Kubernetes API types the records format
// needs.
package vocabulary
