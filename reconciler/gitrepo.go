package reconciler

import (
	"context"
	"fmt"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// gitRepo returns the persistent clone for obj and its Loader, reusing the
// ones opened by an earlier reconcile unless the URL, branch, path,
// credentials or commit settings changed.
func (r *PeeringRepositoryReconciler) gitRepo(ctx context.Context, obj *gitpeerv1alpha1.PeeringRepository) (*openRepo, error) {
	cfg := gitsync.Config{
		URL:    obj.Spec.URL,
		Branch: obj.GetBranch(),
		Path:   obj.Spec.Path,
		Dir:    gitsync.CloneDir(r.DataDir, string(obj.UID)+"-"+obj.Spec.URL),
		Now:    r.Now,

		MaxFileSize: protocol.MaxFileSize,
		Limits:      protocol.Limits,
	}
	cfg.AuthorName, cfg.AuthorEmail = obj.Spec.Commit.GetAuthor()
	var secretVersion string
	if ref := obj.Spec.SecretRef; ref != nil {
		secret, err := r.secret(ctx, obj.Namespace, ref.Name)
		if err != nil {
			return nil, fmt.Errorf("git credentials: %w", err)
		}
		if cfg.Auth, err = gitsync.AuthFromSecret(secret.Data); err != nil {
			return nil, err
		}
		secretVersion = secret.ResourceVersion
	}
	if sk := obj.Spec.Commit; sk != nil && sk.SigningKey != nil {
		secret, err := r.secret(ctx, obj.Namespace, sk.SigningKey.SecretRef.Name)
		if err != nil {
			return nil, fmt.Errorf("commit signing key: %w", err)
		}
		if cfg.Signer, err = signerFromSecret(secret.Data); err != nil {
			return nil, err
		}
		secretVersion += "/" + secret.ResourceVersion
	}
	key := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s", obj.UID, cfg.URL, cfg.Branch, cfg.Path, cfg.AuthorName, cfg.AuthorEmail, secretVersion)

	name := client.ObjectKeyFromObject(obj)
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.repos[name]; o != nil {
		if o.key == key {
			return o, nil
		}
		r.drop(name)
	}
	repo, err := gitsync.Open(cfg)
	if err != nil {
		return nil, err
	}
	o := &openRepo{repo: repo, loader: new(protocol.Loader), key: key}
	r.repos[name] = o
	return o, nil
}

// forget drops the clone handle of a deleted PeeringRepository.
func (r *PeeringRepositoryReconciler) forget(name types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop(name)
	r.phases.forget(name)
	r.rounds.forget(name)
	forgetRepositoryMetrics(name)
}

// drop closes the clone handle of name, releasing its pack files, and
// removes it. The caller holds r.mu; reconciles of one object never overlap,
// so no round is still using the handle.
func (r *PeeringRepositoryReconciler) drop(name types.NamespacedName) {
	o := r.repos[name]
	if o == nil {
		return
	}
	delete(r.repos, name)
	if err := o.repo.Close(); err != nil {
		ctrllog.Log.Error(err, "closing the clone failed", "peeringRepository", name)
	}
}

func (r *PeeringRepositoryReconciler) secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := r.apiReader().Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return nil, err
	}
	return secret, nil
}

// Keys of the commit signing Secret (see the SigningKey API doc): an SSH key
// with its password, as in Flux's Git credentials, or an OpenPGP key with its
// passphrase, as in Flux's image automation signing key.
const (
	signingKeySSH         = "identity"
	signingKeySSHPassword = "password"
	signingKeyPGP         = "git.asc"
	signingKeyPGPPhrase   = "passphrase"
)

func signerFromSecret(data map[string][]byte) (git.Signer, error) {
	switch {
	case len(data[signingKeySSH]) > 0:
		return gitsync.NewSSHSigner(data[signingKeySSH], data[signingKeySSHPassword])
	case len(data[signingKeyPGP]) > 0:
		return gitsync.NewOpenPGPSigner(data[signingKeyPGP], data[signingKeyPGPPhrase])
	}
	return nil, fmt.Errorf("commit signing Secret has neither %q (SSH) nor %q (OpenPGP)", signingKeySSH, signingKeyPGP)
}

// observeGit times one Git operation for the metrics.
func observeGit(op string, f func() (plumbing.Hash, error)) (plumbing.Hash, error) {
	start := time.Now()
	h, err := f()
	gitOperationDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		gitOperationFailures.WithLabelValues(op).Inc()
	}
	return h, err
}
