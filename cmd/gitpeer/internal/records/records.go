// Package records rebuilds, offline from a full checkout of a peering
// repository, the Secrets in which a provider records the certificates it
// issued to each consumer (vocabulary.RecordsSecretName), for an admin who
// lost the provider's cluster state: the agent's own clone is shallow. It
// reads the branch's history with the audit package (in commit-graph order,
// never by date), the certificates of every identity.yaml committed, and
// each peering's Tenant with protocol.Load, and writes the Secrets with the
// agent's own code.
//
// Anyone who can push may write Gitpeer-* trailers and dates, so the rebuild
// only ever adds what history proves and never removes what a commit says:
// certificates leave the records only by their own NotAfter (Secrets).
package records

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"path"
	"slices"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/audit"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/check"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Options of Rebuild.
type Options struct {
	// Branch is the authoritative branch; default main.
	Branch string
	// Path is the peering root inside the repository (spec.path).
	Path string
	// Provider is the provider's cluster ID (spec.clusterID); required.
	Provider string
	// AgentKeys are the public keys of the provider agent's commit signing
	// key (spec.commit.signingKey). Trailers are believed only on commits
	// with a valid signature of one of them; nil believes none.
	AgentKeys *gitsync.TrustedKeys
}

// Result is what Rebuild read: the records by consumer ID, and what it
// could not read or verify (each skipped or flagged, never guessed).
type Result struct {
	Records  map[string]vocabulary.ConsumerRecords
	Warnings []string
}

// NoAgentKeyWarning is Rebuild's first warning without Options.AgentKeys.
const NoAgentKeyWarning = "no agent key: no commit is proven to be the agent's, so no trailer is believed. " +
	"Certificates are read from every identity.yaml ever committed (a forged one can only block revival until its own expiry), " +
	"revocations from tenant.yaml removals and from every revoke trailer (a forged one can only add a revocation), " +
	"and each key pin from the Tenant beside the consumer's last identity.yaml certifying its key: the pins are unverified, review them"

// Rebuild reads the history of the branch of the Git repository at (or
// above) dir and returns the records the provider opts.Provider kept, as far
// as history proves them:
//
//   - certificates: the certificate of every identity.yaml of the provider's
//     peerings ever committed on the branch or a branch merged into it, and
//     the serial and expiry (Gitpeer-Serial, Gitpeer-Expires) of the agent's
//     issue-identity and renew-identity commits signed with opts.AgentKeys;
//   - revocations: every removal of tenant.yaml from the branch and every
//     revoke commit, signed or not (a revocation only blocks revival). A
//     certificate is revoked by the first revocation of its consumer at or
//     after the first commit that holds it, in graph order (audit.GraphOrder);
//     its revocation time is that commit's date;
//   - the key pin: the key of the Tenant on the branch at the consumer's last
//     signed issue-identity commit or, without opts.AgentKeys, beside its
//     last identity.yaml that certifies that key; either way only a Tenant
//     that passes the trust rules (check.Tenant) as of that commit.
//
// Nothing is dropped: a certificate leaves the records only by its own
// NotAfter (Secrets), whatever a commit says or is dated.
func Rebuild(dir string, opts Options) (*Result, error) {
	if opts.Provider == "" {
		return nil, errors.New("the provider's cluster ID is required")
	}
	events, err := audit.Read(dir, audit.Options{Branch: opts.Branch, Path: opts.Path, Provider: opts.Provider, AgentKeys: opts.AgentKeys})
	if err != nil {
		return nil, err
	}
	repo, head, err := audit.Open(dir, opts.Branch)
	if err != nil {
		return nil, err
	}
	commits, err := audit.GraphOrder(repo, head)
	if err != nil {
		return nil, err
	}
	b := &builder{opts: opts, repo: repo, at: map[plumbing.Hash]int{}, consumers: map[string]*consumer{}}
	if opts.AgentKeys == nil {
		b.warn(NoAgentKeyWarning)
	}
	for i, h := range commits {
		b.at[h] = i
	}
	if err := b.identities(commits); err != nil {
		return nil, err
	}
	for _, e := range events {
		b.apply(e)
	}
	return b.result(dir)
}

// certificate is one certificate of a consumer as history shows it.
type certificate struct {
	serial   string
	notAfter time.Time
	// at is the graph position (audit.GraphOrder) of the first commit that
	// holds it.
	at int
}

// revocation is a revocation of a consumer: its commit's graph position and date.
type revocation struct {
	at   int
	time time.Time
}

// identityFile is an identity.yaml committed for a consumer: its commit and
// the commit's date, and the pin of the key its certificate certifies.
type identityFile struct {
	commit plumbing.Hash
	when   time.Time
	keyPin string
}

// consumer is what history shows of one consumer.
type consumer struct {
	certificates map[string]*certificate
	revocations  []revocation
	// identities are its identity.yaml files, in graph order; signedIssue
	// is its last issue-identity commit signed with the agent's key.
	identities  []identityFile
	signedIssue identityFile
}

type builder struct {
	opts      Options
	repo      *git.Repository
	at        map[plumbing.Hash]int
	consumers map[string]*consumer
	warnings  []string
}

func (b *builder) warn(format string, args ...any) {
	b.warnings = append(b.warnings, fmt.Sprintf(format, args...))
}

func (b *builder) consumer(id string) *consumer {
	c := b.consumers[id]
	if c == nil {
		c = &consumer{certificates: map[string]*certificate{}}
		b.consumers[id] = c
	}
	return c
}

// add records a certificate seen at graph position at. Seen twice (in a
// merge, or in a trailer and its identity.yaml), it keeps the later expiry
// and the earlier position: whichever blocks revival longer.
func (c *consumer) add(serial string, notAfter time.Time, at int) {
	if cert := c.certificates[serial]; cert != nil {
		if notAfter.After(cert.notAfter) {
			cert.notAfter = notAfter
		}
		cert.at = min(cert.at, at)
		return
	}
	c.certificates[serial] = &certificate{serial: serial, notAfter: notAfter.UTC(), at: at}
}

// apply reads an event of the audit: a signed identity commit's trailers, or
// a revocation (signed, claimed, or tenant.yaml removed).
func (b *builder) apply(e audit.Event) {
	if e.Consumer == "" {
		return
	}
	at := b.at[plumbing.NewHash(e.Commit)]
	switch {
	case e.Event == audit.Revoked:
		if e.Source == audit.SourceClaim && b.opts.AgentKeys != nil {
			b.warn("commit %s claims a revocation of %s but is not signed with the agent key: its certificates are marked revoked anyway (a revocation only blocks revival), none dropped", e.Commit, e.Consumer)
		}
		c := b.consumer(e.Consumer)
		c.revocations = append(c.revocations, revocation{at: at, time: e.Time})
	case e.Event != audit.IdentityIssued && e.Event != audit.IdentityRenewed:
	case e.Source != audit.SourceAgent:
		if b.opts.AgentKeys != nil {
			b.warn("commit %s claims %s of %s (serial %s) but is not signed with the agent key: not believed; its identity.yaml, if any, is read instead", e.Commit, e.Event, e.Consumer, e.Serial)
		}
	default:
		serial, notAfter, err := certificateTrailers(e.Serial, e.Expires)
		if err != nil {
			b.warn("commit %s (%s of %s): %v; skipped", e.Commit, e.Event, e.Consumer, err)
			return
		}
		c := b.consumer(e.Consumer)
		c.add(serial, notAfter, at)
		if e.Event == audit.IdentityIssued {
			c.signedIssue = identityFile{commit: plumbing.NewHash(e.Commit), when: e.Time}
		}
	}
}

// certificateTrailers checks the Gitpeer-Serial (hex) and Gitpeer-Expires
// (RFC 3339) trailers of an identity commit and returns the serial as the
// agent writes it and the expiry.
func certificateTrailers(serial, expires string) (string, time.Time, error) {
	n, ok := new(big.Int).SetString(serial, 16)
	if !ok {
		return "", time.Time{}, fmt.Errorf("%s %q is not a hexadecimal serial", vocabulary.TrailerSerial, serial)
	}
	notAfter, err := time.Parse(time.RFC3339, expires)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s %q: %w", vocabulary.TrailerExpires, expires, err)
	}
	return n.Text(16), notAfter, nil
}

// identities records the certificate of every identity.yaml of the
// provider's peerings that a commit adds or changes relative to its first
// parent: every version of the file in any commit reachable from the head
// is one of them.
func (b *builder) identities(commits []plumbing.Hash) error {
	root := path.Join(strings.Trim(b.opts.Path, "/"), b.opts.Provider)
	read := map[string]bool{} // consumer/blob already read (merges repeat them)
	for _, h := range commits {
		c, err := b.repo.CommitObject(h)
		if err != nil {
			return err
		}
		parent, err := audit.FirstParent(c)
		if err != nil {
			return err
		}
		before, err := subtree(parent, root)
		if err != nil {
			return fmt.Errorf("commit %s: %w", parent.Hash, err)
		}
		after, err := subtree(c, root)
		if err != nil {
			return fmt.Errorf("commit %s: %w", h, err)
		}
		if after == nil || before != nil && before.Hash == after.Hash {
			continue
		}
		changes, err := object.DiffTree(before, after)
		if err != nil {
			return fmt.Errorf("commit %s: %w", h, err)
		}
		for _, ch := range changes {
			action, err := ch.Action()
			if err != nil {
				return err
			}
			consumerID, name := path.Split(ch.To.Name)
			consumerID = strings.TrimSuffix(consumerID, "/")
			if action == merkletrie.Delete || name != string(vocabulary.IdentityFile) || strings.Contains(consumerID, "/") || read[ch.To.Name+"@"+ch.To.TreeEntry.Hash.String()] {
				continue
			}
			read[ch.To.Name+"@"+ch.To.TreeEntry.Hash.String()] = true
			p := protocol.Path{Provider: b.opts.Provider, Consumer: consumerID, Kind: vocabulary.IdentityFile}
			if err := b.identity(c, p, ch.To.TreeEntry.Hash); err != nil {
				b.warn("commit %s: %v; skipped", h, err)
			}
		}
	}
	return nil
}

// identity records the certificate of the identity.yaml blob at p in c.
func (b *builder) identity(c *object.Commit, p protocol.Path, blob plumbing.Hash) error {
	data, err := readBlob(b.repo, blob)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	pe := &protocol.Documents{Provider: p.Provider, Consumer: p.Consumer}
	if err := pe.Decode(p, data); err != nil {
		return err // names p
	}
	cert, err := crypto.ParseCertificatePEM(pe.Identity.Spec.AuthParams.SignedCRT)
	if err != nil {
		return fmt.Errorf("%s: certificate: %w", p, err)
	}
	pin, err := crypto.KeyPin(cert.PublicKey)
	if err != nil {
		return fmt.Errorf("%s: certificate key: %w", p, err)
	}
	con := b.consumer(p.Consumer)
	con.add(cert.SerialNumber.Text(16), cert.NotAfter, b.at[c.Hash])
	con.identities = append(con.identities, identityFile{commit: c.Hash, when: c.Committer.When, keyPin: pin})
	return nil
}

// readBlob reads a blob of at most protocol.MaxFileSize bytes.
func readBlob(repo *git.Repository, h plumbing.Hash) ([]byte, error) {
	blob, err := repo.BlobObject(h)
	if err != nil {
		return nil, err
	}
	if blob.Size > protocol.MaxFileSize {
		return nil, fmt.Errorf("file is %d bytes, the limit is %d", blob.Size, protocol.MaxFileSize)
	}
	rd, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// subtree returns the tree at dir in c, nil if c is nil or has none there.
func subtree(c *object.Commit, dir string) (*object.Tree, error) {
	if c == nil {
		return nil, nil
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	if dir == "." || dir == "" {
		return tree, nil
	}
	sub, err := tree.Tree(dir)
	if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
		return nil, nil
	}
	return sub, err
}

// result returns the records: each consumer's certificates in graph order,
// revoked by the first revocation at or after them, and its key pin.
func (b *builder) result(dir string) (*Result, error) {
	res := &Result{Records: map[string]vocabulary.ConsumerRecords{}}
	pins := map[string][]identityFile{}
	for id, c := range b.consumers {
		certs := slices.SortedFunc(maps.Values(c.certificates), func(x, y *certificate) int {
			if x.at != y.at {
				return x.at - y.at
			}
			return strings.Compare(x.serial, y.serial)
		})
		if len(certs) == 0 {
			continue // revoked in history, never seen issued
		}
		var rec vocabulary.ConsumerRecords
		for _, cert := range certs {
			r := vocabulary.IssuedRecord{Serial: cert.serial, NotAfter: cert.notAfter}
			if i := slices.IndexFunc(c.revocations, func(r revocation) bool { return r.at >= cert.at }); i >= 0 {
				at := c.revocations[i].time.UTC()
				r.RevokedAt = &at
			}
			rec.Certificates = append(rec.Certificates, r)
		}
		res.Records[id] = rec
		pins[id] = b.pinCandidates(c)
	}
	res.Warnings = b.warnings
	return res, res.pin(dir, b.opts, pins)
}

// maxPinCandidates bounds the commits read for one consumer's pin: each
// reads a whole tree, and a consumer renewed for years has many.
const maxPinCandidates = 8

// pinCandidates returns the commits whose Tenant may give the consumer's key
// pin, best first: its last issue-identity commit signed with the agent's
// key; without agent keys, its last identity.yaml files (maxPinCandidates),
// last first, each with the key its certificate certifies, which the
// Tenant's key must be.
func (b *builder) pinCandidates(c *consumer) []identityFile {
	if b.opts.AgentKeys != nil {
		if c.signedIssue.commit.IsZero() {
			return nil
		}
		return []identityFile{c.signedIssue}
	}
	out := slices.Clone(c.identities[max(0, len(c.identities)-maxPinCandidates):])
	slices.Reverse(out)
	return out
}

// pin sets the key pin of each consumer from the Tenant in the tree of its
// first pin candidate (pinCandidates) whose Tenant has the key the candidate
// requires, read as the agent reads a commit.
func (res *Result) pin(dir string, opts Options, candidates map[string][]identityFile) error {
	top, err := topLevel(dir)
	if err != nil {
		return err
	}
	repo, err := gitsync.OpenLocal(top, gitsync.Config{Path: opts.Path, MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
	if err != nil {
		return err
	}
	defer repo.Close()
	for _, consumer := range slices.Sorted(maps.Keys(candidates)) {
		rec := res.Records[consumer]
		var why []string
		for _, cand := range candidates[consumer] {
			pin, err := tenantKeyPin(repo, cand, opts.Provider, consumer)
			if err == nil && cand.keyPin != "" && pin != cand.keyPin {
				err = errors.New("the Tenant's key is not the key of the certificate in identity.yaml")
			}
			if err != nil {
				why = append(why, fmt.Sprintf("commit %s: %v", cand.commit, err))
				continue
			}
			rec.PinnedKey = pin
			break
		}
		switch {
		case rec.PinnedKey == "" && len(why) == 0:
			res.Warnings = append(res.Warnings, fmt.Sprintf("key pin of %s: no issue-identity commit signed with the agent key; left empty", consumer))
		case rec.PinnedKey == "":
			res.Warnings = append(res.Warnings, fmt.Sprintf("key pin of %s: %s; left empty", consumer, strings.Join(why, "; ")))
		case len(why) > 0:
			res.Warnings = append(res.Warnings, fmt.Sprintf("key pin of %s: skipped %s", consumer, strings.Join(why, "; ")))
		}
		res.Records[consumer] = rec
	}
	return nil
}

// tenantKeyPin returns the pin of the key of the Tenant of provider/consumer
// in the candidate's commit, checked with the trust rules as of its date.
func tenantKeyPin(repo *gitsync.Repo, cand identityFile, provider, consumer string) (string, error) {
	commit := cand.commit
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
	case pe.Invalid[vocabulary.TenantFile] != nil:
		return "", pe.Invalid[vocabulary.TenantFile]
	case pe.Tenant == nil:
		return "", errors.New("no tenant.yaml")
	}
	// The Tenant must pass the rules the provider applied before it issued:
	// a pin is never taken from one it would have refused.
	checked := check.Tenant(pe, check.Facts{Now: cand.when})
	if checked.Err != nil {
		return "", checked.Err
	}
	return crypto.KeyPin(checked.Key)
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
// vocabulary.RecordsSecretName), without the certificates expired at now;
// owner, the PeeringRepository's UID, may be empty: the agent reads the
// Secrets by name and adds its owner label at its next write.
func Secrets(namespace, name string, owner types.UID, records map[string]vocabulary.ConsumerRecords, now time.Time) ([]*corev1.Secret, error) {
	byName := map[string]*corev1.Secret{}
	for _, consumer := range slices.Sorted(maps.Keys(records)) {
		shard := vocabulary.RecordsSecretName(name, consumer)
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
		rec.Certificates, _ = vocabulary.WithoutExpired(rec.Certificates, now)
		if err := vocabulary.SetRecords(secret, owner, consumer, rec); err != nil {
			return nil, err
		}
	}
	out := make([]*corev1.Secret, 0, len(byName))
	for _, shard := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[shard])
	}
	return out, nil
}

// NewList returns the v1 List of secrets, as `kubectl apply -f` takes it.
func NewList(secrets []*corev1.Secret) *corev1.List {
	items := make([]runtime.RawExtension, len(secrets))
	for i, s := range secrets {
		items[i].Object = s
	}
	return &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: items}
}
