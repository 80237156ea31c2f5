// Package liqo plays, for gitpeer's tests, what a Liqo user's admin does by
// hand on a cluster that runs Liqo (the liqoctl commands: create nonce,
// generate tenant, generate identity; the CSR a consumer's Liqo makes for a
// ResourceSlice), and names what Liqo's controllers create. Liqo's own
// controllers run in the tests from Liqo's source (test/liqoreal, the
// liqo-auth-harness of test/liqotools); the specs that use these functions
// run them against those controllers, which check what they produce.
//
// Install lays out only the objects an installed Liqo keeps in its namespace
// (cluster ID, version, key), without any controller: it serves tests that
// read them and nothing more (`gitpeer check`).
//
// Written from Liqo's source (liqotech/liqo v1.2.0; A/ below is
// pkg/liqo-controller-manager/authentication/), not copied from it: Liqo's
// module is not on the Go module proxy, so gitpeer's module cannot import it.
package liqo
