// Package gitsync is gitpeer's Git transport.
//
// A Repo is a persistent bare clone of one remote branch kept under a data
// directory and reused across reconciles and restarts. Poll is one exchange
// with the remote: a ref advertisement when nothing moved, followed by only the
// new objects when the branch moved; the pack of a branch's first fetch is indexed as it arrives, each
// object inflated once (packindex.go). Reads come from commit tree objects, never from a work tree: only
// regular blobs under the configured root path are visible, names that could
// escape it are refused, and every blob's size is checked before it is read.
// Changes lists what changed between the last processed commit and a new head
// and refuses rewritten history. Write applies a set of file changes as one
// commit authored (and optionally signed) by the agent and pushes it with
// compare-and-swap semantics, re-applying the changes on the new head when
// another writer got there first; it builds first on the heads the clone has,
// so a write after a Poll is one exchange too. VerifyCommitSignatures checks commit signatures
// against trusted SSH and OpenPGP keys.
package gitsync
