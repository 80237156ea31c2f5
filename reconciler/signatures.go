package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5/plumbing"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// Key-name suffixes of the trusted keys Secret, as in Flux's spec.verify.
const (
	trustedKeyOpenPGPSuffix = ".asc"
	trustedKeySSHSuffix     = ".sshpub"
)

// verifySignatures checks, when spec.verify is set, the signatures of the commits
// between the last processed commit (exclusive; none: the whole history) and
// the new head, as spec.verify.mode selects them. On failure the head is not
// acted upon: the condition, an event and a log line name the oldest
// unverified commit, and a *Stalling ends the reconciliation, which is
// retried at the interval. Nothing is deleted or revoked, and the last
// processed commit does not advance, so every commit since it, the agent's own
// included, is verified again at the next attempt.
func (s branchIO) verifySignatures(ctx context.Context) error {
	spec := s.obj.Spec.Verify
	if spec == nil {
		deleteCondition(s.obj, gitpeerv1alpha1.SourceVerifiedCondition)
		return nil
	}
	mode := spec.Mode
	if mode == "" {
		mode = gitpeerv1alpha1.VerifyRelevant
	}
	last := plumbing.NewHash(s.obj.Status.LastProcessedCommit)
	if s.head == last && mode != gitpeerv1alpha1.VerifyHEAD && isTrue(s.obj, gitpeerv1alpha1.SourceVerifiedCondition) {
		return nil // no new commit since the last verified one
	}
	bad, err := s.unverified(ctx, spec, mode, last)
	if err == nil && len(bad) == 0 {
		markTrue(s.obj, gitpeerv1alpha1.SourceVerifiedCondition, meta.SucceededReason, "commits up to %s verified (mode %s)", shortHash(s.head.String()), mode)
		return nil
	}
	var msg string
	if err != nil {
		msg = fmt.Sprintf("cannot verify the commits up to %s: %v", s.head, err)
	} else {
		oldest := bad[len(bad)-1] // bad is newest first
		msg = fmt.Sprintf("commit %s by %s is not signed by a trusted key: %s (%d unverified commit(s) in mode %s)",
			oldest.Commit, oldest.Author, oldest.Reason, len(bad), mode)
		if c := s.obj.Spec.Commit; c == nil || c.SigningKey == nil {
			msg += "; spec.commit.signingKey is not set, so the agent's own commits are unsigned"
		}
	}
	msg = fmt.Sprintf("%s; not acting on %s, staying at %s", msg, shortHash(s.head.String()), shortHash(last.String()))
	markFalse(s.obj, gitpeerv1alpha1.SourceVerifiedCondition, gitpeerv1alpha1.CommitVerificationFailedReason, "%s", msg)
	return &Stalling{Reason: gitpeerv1alpha1.CommitVerificationFailedReason, Err: errors.New(msg)}
}

// unverified returns the commits mode selects that no trusted key signed.
func (s branchIO) unverified(ctx context.Context, spec *gitpeerv1alpha1.VerifySpec, mode gitpeerv1alpha1.VerificationMode, last plumbing.Hash) ([]gitsync.Unverified, error) {
	secret, err := s.r.secret(ctx, s.obj.Namespace, spec.SecretRef.Name)
	if err != nil {
		return nil, fmt.Errorf("trusted keys Secret %s: %w", spec.SecretRef.Name, err)
	}
	keys, err := parseTrustedKeys(secret.Data)
	if err != nil {
		return nil, fmt.Errorf("trusted keys Secret %s: %w", spec.SecretRef.Name, err)
	}
	var opts gitsync.SignatureOptions
	switch mode {
	case gitpeerv1alpha1.VerifyHEAD:
		opts.HeadOnly = true
	case gitpeerv1alpha1.VerifyAll:
		opts.All = true
	default:
		opts.Dirs = relevantDirs(s.obj)
	}
	return s.repo.VerifyCommitSignaturesWith(last, s.head, keys, opts)
}

// relevantDirs are the directories (and files), relative to spec.path, holding
// the files the agent acts upon: <clusterID> as a provider, and as a consumer
// <providerID>/<clusterID> and the provider's <providerID>/terms.yaml, which
// the consumer checks its Identity against, for each wanted provider
// (protocol.ParsePath's layout).
func relevantDirs(obj *gitpeerv1alpha1.PeeringRepository) []string {
	me := string(obj.Spec.ClusterID)
	var dirs []string
	if obj.IsProvider() {
		dirs = append(dirs, me)
	}
	if obj.IsConsumer() {
		for _, p := range obj.Spec.Consumer.Providers {
			dirs = append(dirs, string(p)+"/"+me, protocol.TermsPath(string(p)))
		}
	}
	return dirs
}

// parseTrustedKeys reads the trusted public keys of a Secret with Flux's
// conventions: armored OpenPGP public keys under names ending in .asc, SSH
// public keys in authorized_keys format under names ending in .sshpub. Other
// entries are ignored; a Secret with no trusted key at all is an error, as is
// an entry whose keys are not of the kind its name says.
func parseTrustedKeys(data map[string][]byte) (*gitsync.TrustedKeys, error) {
	all := &gitsync.TrustedKeys{}
	for _, name := range sortedKeys(data) {
		pgp := strings.HasSuffix(name, trustedKeyOpenPGPSuffix)
		if !pgp && !strings.HasSuffix(name, trustedKeySSHSuffix) {
			continue
		}
		k, err := gitsync.ParseTrustedKeys(map[string][]byte{name: data[name]})
		if err != nil {
			return nil, err
		}
		if (pgp && len(k.SSH) > 0) || (!pgp && len(k.OpenPGP) > 0) {
			return nil, fmt.Errorf("%s holds keys of the wrong kind for its name", name)
		}
		all.SSH = append(all.SSH, k.SSH...)
		all.OpenPGP = append(all.OpenPGP, k.OpenPGP...)
	}
	if len(all.SSH) == 0 && len(all.OpenPGP) == 0 {
		return nil, fmt.Errorf("no trusted key: no entry named *%s (OpenPGP) or *%s (SSH)", trustedKeyOpenPGPSuffix, trustedKeySSHSuffix)
	}
	return all, nil
}
