// Package v1beta1 holds Liqo's authentication.liqo.io/v1beta1 Tenant and Identity types, field for
// field as Liqo defines them, so that a Tenant written by gitpeer can be applied on a real Liqo
// provider and an Identity produced by `liqoctl generate identity` is accepted by a gitpeer consumer.
// It also holds, in names.go, the Liqo names, labels and annotations that both sides of the
// handshake must agree on.
//
// The CRDs generated from this package are schema-compatible with Liqo's own (same fields, types,
// enums, defaults, printer columns, short names and categories), so gitpeer and Liqo can share them
// in one cluster without either pruning the other's fields.
//
// +kubebuilder:object:generate=true
// +groupName=authentication.liqo.io
package v1beta1
