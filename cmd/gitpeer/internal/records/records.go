// Package records rebuilds, offline from a full checkout of a peering
// repository, the Secrets in which a provider records the certificates it
// issued to each consumer (reconciler.RecordsSecretName), for an admin who
// lost the provider's cluster state: the agent's own clone is shallow. It
// reads the branch's history with the audit package and each peering's
// Tenant with protocol.Load, and writes the Secrets with the agent's own code.
package records

import (
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/audit"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// Options of Rebuild.
type Options struct {
	// Branch is the authoritative branch; default main.
	Branch string
	// Path is the peering root inside the repository (spec.path).
	Path string
	// Provider is the provider's cluster ID (spec.clusterID); required.
	Provider string
}

// Result is what Rebuild read: the records by consumer ID, and what it
// could not read (each skipped, never guessed).
type Result struct {
	Records  map[string]reconciler.ConsumerRecords
	Warnings []string
}

// Rebuild reads the history of the branch of the Git repository at (or
// above) dir and returns the records the provider opts.Provider kept: every
// certificate of an issue-identity or renew-identity commit (Gitpeer-Serial,
// Gitpeer-Expires), revoked at the time of each later revocation (the
// removal of tenant.yaml from the branch or the agent's revoke commit, as
// `gitpeer audit` reads them; certificates expired by then are dropped, as
// the agent does), and the key pin: the key of the Tenant on the branch at
// the consumer's last issue-identity commit.
func Rebuild(dir string, opts Options) (*Result, error) {
	if opts.Provider == "" {
		return nil, errors.New("the provider's cluster ID is required")
	}
	events, err := audit.Read(dir, audit.Options{Branch: opts.Branch, Path: opts.Path, Provider: opts.Provider})
	if err != nil {
		return nil, err
	}
	res := &Result{Records: map[string]reconciler.ConsumerRecords{}}
	lastIssue := map[string]string{}
	for _, e := range events {
		if err := res.apply(e); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("commit %s (%s of %s): %v; skipped", e.Commit, e.Event, e.Consumer, err))
		} else if e.Event == audit.IdentityIssued {
			lastIssue[e.Consumer] = e.Commit
		}
	}
	if len(lastIssue) == 0 {
		return res, nil
	}
	return res, res.pin(dir, opts, lastIssue)
}

// apply records what event e changes: a certificate issued, or revoked.
func (res *Result) apply(e audit.Event) error {
	rec, known := res.Records[e.Consumer]
	switch {
	case e.Event == audit.IdentityIssued || e.Event == audit.IdentityRenewed:
		notAfter, err := certificate(e.Serial, e.Expires)
		if err != nil {
			return err
		}
		rec.Certificates, _ = reconciler.WithIssued(rec.Certificates, e.Serial, notAfter)
	case e.Event == audit.Revoked && known:
		rec.Certificates, _ = reconciler.WithRevoked(rec.Certificates, e.Time)
	default:
		return nil
	}
	res.Records[e.Consumer] = rec
	return nil
}

// certificate checks the Gitpeer-Serial (hex) and Gitpeer-Expires (RFC 3339)
// trailers of an identity commit and returns the expiry.
func certificate(serial, expires string) (time.Time, error) {
	if _, ok := new(big.Int).SetString(serial, 16); !ok {
		return time.Time{}, fmt.Errorf("%s %q is not a hexadecimal serial", protocol.TrailerSerial, serial)
	}
	notAfter, err := time.Parse(time.RFC3339, expires)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: %w", protocol.TrailerExpires, expires, err)
	}
	return notAfter, nil
}

// pin sets the key pin of each consumer from the Tenant in the tree of its
// last issue-identity commit, read as the agent reads a commit.
func (res *Result) pin(dir string, opts Options, lastIssue map[string]string) error {
	top, err := topLevel(dir)
	if err != nil {
		return err
	}
	repo, err := gitsync.OpenLocal(top, gitsync.Config{Path: opts.Path, MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
	if err != nil {
		return err
	}
	defer repo.Close()
	for _, consumer := range slices.Sorted(maps.Keys(lastIssue)) {
		pin, err := tenantKeyPin(repo, plumbing.NewHash(lastIssue[consumer]), opts.Provider, consumer)
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("commit %s: key pin of %s: %v; left empty", lastIssue[consumer], consumer, err))
			continue
		}
		rec := res.Records[consumer]
		rec.PinnedKey = pin
		res.Records[consumer] = rec
	}
	return nil
}

// tenantKeyPin returns the pin of the key of the Tenant of provider/consumer
// in commit.
func tenantKeyPin(repo *gitsync.Repo, commit plumbing.Hash, provider, consumer string) (string, error) {
	listing, err := repo.List(commit)
	if err != nil {
		return "", err
	}
	loaded := protocol.Load(listing, repo.NewRound(commit), func(p, c string) bool {
		return p == provider && (c == "" || c == consumer)
	})
	pe := loaded.Peerings[provider+"/"+consumer]
	switch {
	case pe == nil:
		return "", errors.New("no peering directory")
	case pe.Invalid[protocol.Tenant] != nil:
		return "", pe.Invalid[protocol.Tenant]
	case pe.Tenant == nil:
		return "", errors.New("no tenant.yaml")
	}
	key, err := crypto.ParsePublicKey(pe.Tenant.Spec.PublicKey)
	if err != nil {
		return "", fmt.Errorf("tenant public key: %w", err)
	}
	return reconciler.KeyPin(key)
}

// topLevel returns the top of the worktree holding dir (or dir itself, for
// a bare repository): peering roots are relative to it, as in audit.
func topLevel(dir string) (string, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return "", fmt.Errorf("open %s: %w", dir, err)
	}
	wt, err := repo.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return dir, nil
	}
	if err != nil {
		return "", err
	}
	return wt.Filesystem.Root(), nil
}

// Secrets returns the records Secrets of the PeeringRepository name in
// namespace as the agent writes them (one per shard that holds a consumer, see
// reconciler.RecordsSecretName), without the certificates expired at now;
// owner, the PeeringRepository's UID, may be empty: the agent reads the
// Secrets by name and adds its owner label at its next write.
func Secrets(namespace, name string, owner types.UID, records map[string]reconciler.ConsumerRecords, now time.Time) ([]*corev1.Secret, error) {
	byName := map[string]*corev1.Secret{}
	for _, consumer := range slices.Sorted(maps.Keys(records)) {
		shard := reconciler.RecordsSecretName(name, consumer)
		secret := byName[shard]
		if secret == nil {
			secret = &corev1.Secret{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: shard},
				Type:       corev1.SecretTypeOpaque,
				Data:       map[string][]byte{},
			}
			byName[shard] = secret
		}
		rec := records[consumer]
		rec.Certificates, _ = reconciler.WithoutExpired(rec.Certificates, now)
		if err := reconciler.SetRecords(secret, owner, consumer, rec); err != nil {
			return nil, err
		}
	}
	out := make([]*corev1.Secret, 0, len(byName))
	for _, shard := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[shard])
	}
	return out, nil
}

// List is a v1 List of Secrets, as `kubectl apply -f` takes it.
type List struct {
	metav1.TypeMeta `json:",inline"`
	Items           []*corev1.Secret `json:"items"`
}

// NewList returns the List of secrets.
func NewList(secrets []*corev1.Secret) *List {
	return &List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: secrets}
}
