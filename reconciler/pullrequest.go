package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/check"
	"github.com/gitpeer/gitpeer/reconciler/forge"
	"github.com/gitpeer/gitpeer/reconciler/plan/consumer"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/verdict"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// ForgeTokenKey is the key of the forge API token in the Secret of spec.consumer.pullRequest.
const ForgeTokenKey = "token"

// followPullRequest keeps the pull request of pe's review branch in line with o, the outcome of
// this round's consumer step for pe, when spec.consumer.pullRequest is set: while the Tenant waits
// for approval it opens or updates the request with the offline checks of its tenant.yaml in the
// description (its own claim: it posts no status, the review signal is the repository's CI);
// once the Tenant is merged (the round it is first seen) or the request closed, it deletes the
// review branch. A closed request is reported in the peering's message and not reopened until the
// proposal changes. A forge error is reported and leaves o's phase as it is.
func (s consumerStep) followPullRequest(ctx context.Context, pe *protocol.Documents, o outcome) outcome {
	spec := s.obj.Spec.Consumer
	if spec == nil || spec.PullRequest == nil || spec.Direct || o.err != nil {
		return o
	}
	requesting := pe.Request == nil && o.phase == gitpeerv1alpha1.PhaseRequested
	if pe.Nonce == nil && pe.Tenant == nil && !requesting {
		return o
	}
	merged := check.OwnTenant(pe, s.key.Public()) == nil
	if merged && s.previousPhase(pe.Provider) != gitpeerv1alpha1.PhaseAwaitingApproval {
		return o // cleaned up when the merge was first seen; no forge call every round after
	}
	branch, err := consumer.ReviewBranch(spec, pe.Provider, pe.Consumer)
	if err != nil {
		return outcome{err: err}
	}
	syncing := !merged && (requesting || o.phase == gitpeerv1alpha1.PhaseAwaitingApproval)
	var p forge.Proposal
	var last synced
	if syncing {
		p = s.proposal(pe, branch)
		last = s.r.syncedPullRequest(s.obj, pe.Provider, p)
		if last.current(s.r.Now(), s.obj.GetRequeueAfter()) {
			return s.reportPullRequest(pe, o, last.res, false) // nothing it depends on changed: no forge call
		}
	}
	c, err := s.forgeClient(ctx, spec.PullRequest)
	if err == nil {
		var res forge.Result
		if merged {
			res, err = forge.Finish(ctx, c, branch, s.obj.GetBranch())
		} else if syncing {
			res, err = forge.Sync(ctx, c, p)
		}
		if err == nil {
			if syncing {
				last.at, last.res = s.r.Now(), res
				s.r.pullRequests.Store(last.key, last)
			}
			return s.reportPullRequest(pe, o, res, true)
		}
	}
	s.r.eventAbout(s.obj, corev1.EventTypeWarning, vocabulary.ReasonPullRequestFailed, pe.Provider, "pull request for provider %s: %v", pe.Provider, err)
	o.message += fmt.Sprintf("; pull request: %v", err)
	return o
}

// previousPhase is the phase the status recorded for the consumer peering with provider.
func (s consumerStep) previousPhase(provider string) gitpeerv1alpha1.PeeringPhase {
	for _, p := range s.obj.Status.Peerings {
		if string(p.PeerID) == provider && p.Role == gitpeerv1alpha1.ConsumerRole {
			return p.Phase
		}
	}
	return ""
}

// reportPullRequest adds what happened to the pull request to o's message, with an event when
// something did and the forge was just asked (fresh).
func (s consumerStep) reportPullRequest(pe *protocol.Documents, o outcome, res forge.Result, fresh bool) outcome {
	pr := res.PullRequest
	if pr == nil {
		return o
	}
	var note string
	switch res.Action {
	case forge.WasClosed:
		note = fmt.Sprintf("pull request %s was closed without merging; not reopened until the provider's nonce or this cluster's key changes", pr.URL)
	case forge.WasMerged:
		note = fmt.Sprintf("pull request %s merged; review branch deleted", pr.URL)
	default:
		note = fmt.Sprintf("pull request %s", pr.URL)
	}
	if fresh && res.Action != forge.Unchanged {
		s.r.eventAbout(s.obj, corev1.EventTypeNormal, vocabulary.ReasonPullRequest, pe.Provider, "pull request %s for provider %s %s", pr.URL, pe.Provider, res.Action)
	}
	o.message += "; " + note
	return o
}

// forgeClient returns the client of the forge hosting the repository, with the Secret's token.
func (s consumerStep) forgeClient(ctx context.Context, spec *gitpeerv1alpha1.PullRequestSpec) (forge.Client, error) {
	repo, err := forge.Locate(s.obj.Spec.URL, forge.Provider(spec.Provider), spec.APIURL)
	if err != nil {
		return nil, err
	}
	secret, err := s.r.secret(ctx, s.obj.Namespace, spec.SecretRef.Name)
	if err != nil {
		return nil, fmt.Errorf("forge token: %w", err)
	}
	return newForge(repo, strings.TrimSpace(string(secret.Data[ForgeTokenKey])))
}

// newForge makes forge clients; tests count the calls of a fake one.
var newForge = forge.New

// proposal is the pull request of pe's Tenant: what it grants, and its checks.
func (s consumerStep) proposal(pe *protocol.Documents, branch string) forge.Proposal {
	dir := path.Join(s.obj.Spec.Path, protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer}.Dir())
	key, _ := crypto.KeyPin(s.key.Public())
	p := forge.Proposal{
		Head: branch, Base: s.obj.GetBranch(),
		Title: fmt.Sprintf("Peering: %s asks %s for an identity", pe.Consumer, pe.Provider),
		Facts: forge.Facts{
			Consumer: pe.Consumer, Provider: pe.Provider, KeyFingerprint: key,
			TenantNamespace: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(pe.Consumer)), BaseCommit: s.head.String(), Path: dir,
		},
		Verify: func(ctx context.Context, read func(string) ([]byte, error)) []string {
			return s.checkProposed(pe, read)
		},
	}
	if pe.Terms != nil {
		p.Facts.TenantNamespace = protocol.TenantNamespace(pe.Terms, pe.Consumer)
		p.Facts.Terms = forge.QuoteTerms(pe.Terms, path.Join(s.obj.Spec.Path, protocol.TermsPath(pe.Provider)))
	}
	if pe.Nonce == nil { // the request itself: it grants nothing
		p.Title = fmt.Sprintf("Peering request: %s asks %s for a nonce", pe.Consumer, pe.Provider)
		p.Facts.Request, p.KeepClosed = true, true // the kept branch stops the agent from pushing it again
		return p
	}
	nonce := sha256.Sum256([]byte(pe.Nonce.Spec.Nonce))
	p.Facts.NonceDigest = hex.EncodeToString(nonce[:])
	return p
}

// checkProposed runs the offline checks of `gitpeer verify` (verdict) on pe as a merge of the pull
// request would leave it: the branch's request.yaml and nonce.yaml with the tenant.yaml of the
// pull request's head. Rules only the provider can check are listed as such, never as passed.
// The lines go in the description as the proposer's own claim, never in a status.
func (s consumerStep) checkProposed(pe *protocol.Documents, read func(string) ([]byte, error)) []string {
	merged := &protocol.Documents{Provider: pe.Provider, Consumer: pe.Consumer, Request: pe.Request, Nonce: pe.Nonce, Terms: pe.Terms, TermsErr: pe.TermsErr, Invalid: map[vocabulary.FileKind]error{}}
	for k, err := range pe.Invalid {
		if k != vocabulary.TenantFile && k != vocabulary.IdentityFile {
			merged.Invalid[k] = err
		}
	}
	kind := vocabulary.TenantFile
	if pe.Nonce == nil {
		kind, merged.Request = vocabulary.RequestFile, nil
	}
	rel := protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: kind}
	data, err := read(path.Join(s.obj.Spec.Path, rel.String()))
	if err == nil {
		_ = merged.Decode(rel, data) // a rejection is recorded in merged.Invalid and reported below
	} else {
		merged.MarkInvalid(kind, fmt.Errorf("%s: cannot read it at the pull request's head: %w", rel, err))
	}
	var lines []string
	if err := merged.Invalid[kind]; err != nil {
		lines = append(lines, "failed: "+err.Error())
	}
	for _, r := range verdict.Peering(merged, s.r.Now()) {
		switch {
		case r.Directory:
			lines = append(lines, r.Path+": "+r.Reason)
		case !r.Valid:
			lines = append(lines, "failed: "+r.Path+": "+r.Reason)
		default:
			lines = append(lines, "passed: "+r.Path+": "+strings.TrimSuffix(r.Reason, "; "+verdict.ProviderChecks))
		}
	}
	return append(lines, strings.Replace(verdict.ProviderChecks, "checked by the provider:", "checked by the provider after merge, not here:", 1))
}

// synced is what the forge answered the last sync of a peering's pull request, and of which
// proposal.
type synced struct {
	key    syncedKey
	digest string    // of the proposal (proposalDigest)
	at     time.Time // zero: not synced by this process
	res    forge.Result
}

// syncedKey names a consumer peering: its PeeringRepository and provider.
type syncedKey struct {
	repo     types.NamespacedName
	provider string
}

// syncedPullRequest returns the last sync of the pull request of obj's peering with provider if
// it proposed what p does, else an entry not synced yet, for p.
func (r *PeeringRepositoryReconciler) syncedPullRequest(obj *gitpeerv1alpha1.PeeringRepository, provider string, p forge.Proposal) synced {
	key := syncedKey{repo: client.ObjectKeyFromObject(obj), provider: provider}
	digest := proposalDigest(p, obj.Generation)
	if v, ok := r.pullRequests.Load(key); ok && v.(synced).digest == digest {
		return v.(synced)
	}
	return synced{key: key, digest: digest}
}

// current reports whether the last sync stands for this round: it is less than an interval old.
// Past it, the forge is asked again, for what people did meanwhile (closed the pull request,
// pushed to its branch).
func (l synced) current(now time.Time, interval time.Duration) bool {
	return !l.at.IsZero() && now.Sub(l.at) < interval
}

// proposalDigest identifies what a sync of p depends on that the agent knows of: the branches,
// the title, the facts and the spec's generation (forge, token Secret). The branch's head
// (BaseCommit) is left out: other peerings move it all the time, and a proposal it alone changes
// is refreshed within an interval.
func proposalDigest(p forge.Proposal, generation int64) string {
	p.Facts.BaseCommit = ""
	data, _ := json.Marshal(struct {
		Head, Base, Title string
		Facts             forge.Facts
		KeepClosed        bool
		Generation        int64
	}{p.Head, p.Base, p.Title, p.Facts, p.KeepClosed, generation})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
