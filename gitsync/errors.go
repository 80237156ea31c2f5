package gitsync

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// Sentinel errors. Every error returned by this package that belongs to one of
// these classes matches it with errors.Is.
var (
	// ErrAuthFailed means the server refused the credentials.
	ErrAuthFailed = errors.New("git authentication failed")
	// ErrHostKeyMismatch means the SSH server presented a host key that is not
	// the one in known_hosts (or the host is not in known_hosts at all).
	ErrHostKeyMismatch = errors.New("ssh host key verification failed")
	// ErrCertificateUntrusted means the HTTPS server's certificate does not
	// verify against the system roots and the configured CA bundle.
	ErrCertificateUntrusted = errors.New("git server certificate not trusted")
	// ErrUnreachable means the server could not be reached, did not answer in
	// time, or dropped the connection: a transient condition.
	ErrUnreachable = errors.New("git server unreachable")
	// ErrRepositoryNotFound means the server answered but has no such
	// repository (or does not show it to these credentials).
	ErrRepositoryNotFound = errors.New("git repository not found")
	// ErrBranchNotFound means the remote has no such branch.
	ErrBranchNotFound = errors.New("branch not found on remote")
	// ErrPushRejected means a push was still rejected after every retry.
	ErrPushRejected = errors.New("push rejected")
	// ErrHistoryRewritten means the new head does not descend from the last
	// processed commit (force push or rewritten history).
	ErrHistoryRewritten = errors.New("branch history rewritten")
	// ErrMergeReverts means a merge commit since the last processed commit
	// brings back what one of its parents holds where another parent, which
	// descends from it, had changed it (see MergeRevertError).
	ErrMergeReverts = errors.New("merge reverts a descendant's change")
	// ErrFileTooLarge means a blob is larger than the configured cap.
	ErrFileTooLarge = errors.New("file exceeds size limit")
	// ErrNotRegularFile means the path is a symlink, submodule, executable or directory.
	ErrNotRegularFile = errors.New("not a regular file")
	// ErrUnsafePath means a path is absolute, has empty, "." or ".." components,
	// or would otherwise escape the configured root.
	ErrUnsafePath = errors.New("unsafe path")
	// ErrFileNotFound means no entry exists at the path.
	ErrFileNotFound = errors.New("file not found")
	// ErrMalformedTree means a tree (directory) holds two entries of one name
	// or entries out of Git's canonical order: readers could disagree on which
	// entry counts, so none of the directory is read.
	ErrMalformedTree = errors.New("malformed tree")
	// ErrLimitExceeded means reading a directory or file would exceed a cap of
	// Limits; it is refused before anything is read.
	ErrLimitExceeded = errors.New("read limit exceeded")
	// ErrRoundLimitExceeded is the ErrLimitExceeded of a cap on one reading
	// (Limits.MaxDirectories, Limits.MaxRoundBytes) rather than on the object
	// itself: the same object may be read in a later round.
	ErrRoundLimitExceeded = fmt.Errorf("%w in this round", ErrLimitExceeded)
)

// HistoryError reports that New does not descend from Last.
type HistoryError struct {
	Last, New plumbing.Hash
}

func (e *HistoryError) Error() string {
	return fmt.Sprintf("%v: %s does not descend from last processed commit %s", ErrHistoryRewritten, e.New, e.Last)
}

// Unwrap makes errors.Is(err, ErrHistoryRewritten) true.
func (e *HistoryError) Unwrap() error { return ErrHistoryRewritten }

// FileError reports a file that cannot be read safely.
type FileError struct {
	// Path is the file's path relative to the configured root.
	Path string
	// Reason is one of ErrFileTooLarge, ErrNotRegularFile, ErrUnsafePath,
	// ErrFileNotFound, ErrMalformedTree, ErrLimitExceeded, ErrRoundLimitExceeded.
	Reason error
	// Detail says more, e.g. the size or the kind of entry.
	Detail string
	// Hash is the object id of the entry a listing skipped (Listing.Skipped):
	// a reader that kept its verdict knows from it whether the entry changed.
	// Zero for other errors.
	Hash plumbing.Hash
}

func (e *FileError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s: %v", e.Path, e.Reason)
	}
	return fmt.Sprintf("%s: %v (%s)", e.Path, e.Reason, e.Detail)
}

// Unwrap returns Reason.
func (e *FileError) Unwrap() error { return e.Reason }

// PushError reports a push that was rejected on every attempt.
type PushError struct {
	Branch   string
	Attempts int
	Last     error
}

func (e *PushError) Error() string {
	return fmt.Sprintf("%v: branch %s after %d attempts: %v", ErrPushRejected, e.Branch, e.Attempts, e.Last)
}

// Unwrap makes errors.Is match ErrPushRejected and the last underlying error.
func (e *PushError) Unwrap() []error { return []error{ErrPushRejected, e.Last} }
