// Package liqo is a test double of Liqo's authentication controllers: what an
// installed Liqo does with the objects gitpeer creates, as read in Liqo's
// source (liqotech/liqo v1.2.0; paths below are relative to that repository,
// A/ = pkg/liqo-controller-manager/authentication/).
//
// Liqo's Go module is not on the module proxy here, so its controllers cannot
// run in the tests. The double reproduces, one function per behaviour, each
// citing Liqo's file, the behaviours gitpeer meets: where Liqo keeps its cluster ID
// and key (Install), the nonce creator, the tenant controller (handshake check,
// certificate cache, bindings, whole-status replace, renewal at 2/3), the nonce
// signer, the identity controller, the renewal path, the Tenant admission rules,
// the ResourceSlice key check and the liqoctl commands gitpeer imitates. It is
// written from that reading, not copied from Liqo. Where Liqo's path is
// collapsed (the CRD replicator carrying Renew objects between clusters) the
// function says so.
package liqo
