// Package liqo decides whether the agent works beside an installed Liqo (Liqo
// mode) and reads what it then uses of Liqo: its cluster ID and its cluster
// key. It reads Liqo's objects and never creates or changes them.
package liqo

import (
	"context"
	gocrypto "crypto"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
)

// Where an installed Liqo keeps its cluster ID, in its namespace (its key: crypto.KeySecretName)
// (liqotech/liqo v1.2.0: pkg/consts/clusterid.go, pkg/liqo-controller-manager/authentication/keys.go).
const (
	// ClusterIDConfigMap holds Liqo's cluster ID under ClusterIDKey.
	ClusterIDConfigMap = "liqo-clusterid-configmap"
	// ClusterIDKey is the key of the cluster ID in ClusterIDConfigMap.
	ClusterIDKey = "CLUSTER_ID"
	// VersionLabel on ClusterIDConfigMap holds the installed Liqo's version: Liqo's chart puts its
	// common labels, the version included, on every object it installs
	// (deployments/liqo/templates/_helpers.tpl "liqo.labels" and "liqo.version",
	// liqo-clusterid-configmap.yaml), and `liqoctl install` installs that chart. `liqoctl version`
	// reads the tag of the controller manager's image instead, which the agent may not read.
	VersionLabel = "app.kubernetes.io/version"
)

// The Liqo versions gitpeer works with.
const (
	// MinVersion is the first Liqo version gitpeer works with: v1.0.0 and v1.0.1 panic on PEM keys,
	// and up to v1.1.2 Liqo never renews the certificates it issues for the control plane.
	MinVersion = "v1.1.3"
	// TestedVersion is the Liqo version `make test` runs gitpeer's Liqo-mode specs on.
	TestedVersion = "v1.2.0"
)

// Mode is the mode the agent runs in for one PeeringRepository.
type Mode struct {
	// Active is true in Liqo mode, false in standalone mode.
	Active bool
	// Namespace is Liqo's namespace (spec.liqo.namespace), also in standalone mode.
	Namespace string
	// ClusterID is Liqo's cluster ID; empty in standalone mode.
	ClusterID string
	// Key is Liqo's cluster key; nil in standalone mode.
	Key gocrypto.Signer
	// Version is Liqo's version (VersionLabel); empty when unknown or in standalone mode.
	Version string
	// VersionWarning says why Liqo's version was not checked, or that it is newer than
	// TestedVersion; empty otherwise. Liqo mode runs anyway (CheckVersion).
	VersionWarning string
}

// String says the mode for people, as condition LiqoReady does.
func (m Mode) String() string {
	if !m.Active {
		return "standalone"
	}
	s := fmt.Sprintf("Liqo mode: cluster ID %s, key type %s", m.ClusterID, crypto.KeyType(m.Key.Public()))
	if m.Version != "" {
		s += ", Liqo " + m.Version
	}
	if m.VersionWarning != "" {
		s += "; warning: " + m.VersionWarning
	}
	return s
}

// Error is why Liqo mode cannot run: Reason is the reason of condition
// LiqoReady (a gitpeerv1alpha1.Liqo*Reason), and the agent stalls with it.
type Error struct {
	Reason string
	Err    error
}

// Error returns the cause's message.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func newError(reason string, format string, args ...any) *Error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Detect decides the mode of spec (nil: Auto in namespace liqo) for the
// cluster whose spec.clusterID is clusterID. reader must read from the API
// server, not from a cache: Liqo's key is in a Secret. Disabled reads
// nothing. Otherwise Liqo mode is on when both Liqo's ConfigMap and key Secret
// exist; with neither, Auto is standalone and Enabled an *Error
// (LiqoPrerequisitesMissing), as is Auto with only one of them or an object
// the agent may not read. In Liqo mode the cluster IDs must match
// (LiqoClusterIDMismatch), Liqo's version must not be one gitpeer cannot
// work with (CheckVersion: LiqoVersionUnsupported) and the key pair must be
// valid (LiqoKeyInvalid).
// Other errors (API server unavailable) are returned as they are.
func Detect(ctx context.Context, reader client.Reader, spec *gitpeerv1alpha1.LiqoSpec, clusterID string) (Mode, error) {
	mode := Mode{Namespace: spec.GetNamespace()}
	if spec.GetMode() == gitpeerv1alpha1.LiqoDisabled {
		return mode, nil
	}
	var cm corev1.ConfigMap
	var secret corev1.Secret
	cmFound, err := get(ctx, reader, mode.Namespace, ClusterIDConfigMap, &cm)
	if err != nil {
		return mode, err
	}
	secretFound, err := get(ctx, reader, mode.Namespace, crypto.KeySecretName, &secret)
	if err != nil {
		return mode, err
	}
	if !cmFound && !secretFound && spec.GetMode() == gitpeerv1alpha1.LiqoAuto {
		return mode, nil
	}
	if err := requirePresent(spec.GetMode(), mode.Namespace, cmFound, secretFound); err != nil {
		return mode, err
	}
	mode.Active = true
	if mode.ClusterID, err = liqoClusterID(&cm, clusterID); err != nil {
		return mode, err
	}
	mode.Version = cm.Labels[VersionLabel]
	if mode.VersionWarning, err = CheckVersion(mode.Version); err != nil {
		return mode, err
	}
	key, err := crypto.ParseKeySecret(&secret)
	if err != nil {
		return mode, &Error{Reason: gitpeerv1alpha1.LiqoKeyInvalidReason, Err: fmt.Errorf("Liqo's cluster key: %w", err)}
	}
	mode.Key = key
	return mode, nil
}

// get reads one of Liqo's objects and reports whether it exists. Forbidden is
// an *Error: the agent cannot tell whether Liqo is there.
func get(ctx context.Context, reader client.Reader, namespace, name string, obj client.Object) (bool, error) {
	err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsForbidden(err):
		return false, newError(gitpeerv1alpha1.LiqoPrerequisitesMissingReason,
			"cannot tell whether Liqo is installed: the agent may not read %T %s/%s (%v); grant it get on that object (see the install's RBAC), or set spec.liqo.mode Disabled if Liqo is not used",
			obj, namespace, name, err)
	}
	return false, fmt.Errorf("reading Liqo's %s/%s: %w", namespace, name, err)
}

// requirePresent fails, naming what is missing, unless both of Liqo's
// objects exist.
func requirePresent(mode gitpeerv1alpha1.LiqoMode, namespace string, cmFound, secretFound bool) error {
	var missing []string
	if !cmFound {
		missing = append(missing, "ConfigMap "+namespace+"/"+ClusterIDConfigMap)
	}
	if !secretFound {
		missing = append(missing, "Secret "+namespace+"/"+crypto.KeySecretName)
	}
	switch {
	case len(missing) == 0:
		return nil
	case mode == gitpeerv1alpha1.LiqoEnabled:
		return newError(gitpeerv1alpha1.LiqoPrerequisitesMissingReason,
			"spec.liqo.mode is Enabled but Liqo's %s missing: install Liqo in namespace %s (or fix spec.liqo.namespace)", strings.Join(missing, " and "), namespace)
	}
	return newError(gitpeerv1alpha1.LiqoPrerequisitesMissingReason,
		"Liqo looks half installed in namespace %s: %s is missing while the other exists; the agent does not guess the mode: wait for Liqo to finish, or set spec.liqo.mode Enabled or Disabled",
		namespace, missing[0])
}

// liqoClusterID returns Liqo's cluster ID from its ConfigMap and requires it
// to be clusterID.
func liqoClusterID(cm *corev1.ConfigMap, clusterID string) (string, error) {
	id := cm.Data[ClusterIDKey]
	if id == "" {
		return "", newError(gitpeerv1alpha1.LiqoPrerequisitesMissingReason, "Liqo's ConfigMap %s/%s has no %s", cm.Namespace, cm.Name, ClusterIDKey)
	}
	if id != clusterID {
		return id, newError(gitpeerv1alpha1.LiqoClusterIDMismatchReason,
			"Liqo's cluster ID is %q (ConfigMap %s/%s) but spec.clusterID is %q: in Liqo mode they must be equal, so peers know this cluster under one name; the agent refuses to run until they are",
			id, cm.Namespace, cm.Name, clusterID)
	}
	return id, nil
}

// CheckVersion decides whether gitpeer works with Liqo version v (the value
// of VersionLabel, "" when absent). A version before MinVersion is refused,
// an *Error (LiqoVersionUnsupported) saying what fails with it. A version
// that is no semantic version, or none, is run with a warning rather than
// refused: every release Liqo published carries its semantic version there,
// so what lacks it is a build from a commit (the chart's tag is then the
// commit) or an install that dropped the chart's labels; refusing would stop
// Liqo mode for installs that work, while the versions known not to work are
// all releases, which are recognized. A version newer than TestedVersion runs
// with a warning too.
func CheckVersion(v string) (warning string, err error) {
	if v == "" {
		return fmt.Sprintf("Liqo's version is unknown (no label %s on ConfigMap %s): not checked; gitpeer needs Liqo %s or later and is tested with %s",
			VersionLabel, ClusterIDConfigMap, MinVersion, TestedVersion), nil
	}
	parsed, perr := version.ParseSemantic(v)
	if perr != nil {
		return fmt.Sprintf("Liqo's version %q (label %s on ConfigMap %s) is no release version: not checked; gitpeer needs Liqo %s or later and is tested with %s",
			v, VersionLabel, ClusterIDConfigMap, MinVersion, TestedVersion), nil
	}
	var why string
	switch {
	case parsed.LessThan(version.MustParseSemantic("v1.0.0")):
		why = "Liqo before v1.0.0 has no authentication.liqo.io Tenants, the peering gitpeer drives"
	case parsed.LessThan(version.MustParseSemantic("v1.0.2")):
		why = "Liqo v1.0.0 and v1.0.1 panic on the PEM keys of the handshake, and Liqo up to v1.1.2 never renews the control-plane certificates it issues"
	case parsed.LessThan(version.MustParseSemantic(MinVersion)):
		why = "Liqo up to v1.1.2 never renews the control-plane certificates it issues, so every peering would stop working when its certificate expires"
	case parsed.GreaterThan(version.MustParseSemantic(TestedVersion)):
		return fmt.Sprintf("Liqo %s is newer than %s, the version gitpeer is tested with: see docs/liqo.md to run the conformance suite against it", v, TestedVersion), nil
	default:
		return "", nil
	}
	return "", newError(gitpeerv1alpha1.LiqoVersionUnsupportedReason,
		"Liqo %s is installed (label %s on ConfigMap %s) but gitpeer needs Liqo %s or later: %s; upgrade Liqo (tested: %s), or set spec.liqo.mode Disabled to run standalone",
		v, VersionLabel, ClusterIDConfigMap, MinVersion, why, TestedVersion)
}

// Reason returns the LiqoReady reason of err if it is an *Error.
func Reason(err error) (string, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason, true
	}
	return "", false
}
