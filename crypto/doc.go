// Package crypto holds everything gitpeer signs or verifies during Liqo's
// inter-cluster authentication handshake: the cluster key pair, nonces and
// their signatures, the consumer's certificate signing request, the issued
// client certificate and the kubeconfig built from it.
//
// The formats are byte-compatible with Liqo (see "Liqo wire formats" in the
// design document): a Tenant produced here can be applied on a Liqo provider,
// and an Identity produced by liqoctl is accepted here.
//
// Every check of untrusted input returns an *Error whose Rule says which rule
// failed and whose message says precisely why, so callers can show it to
// people and branch on it with errors.As. Only secret.go talks to Kubernetes.
package crypto
