package gitsync

import (
	"errors"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
)

// DefaultMaxFileSize is the default cap on the size of a blob that may be read.
const DefaultMaxFileSize = 64 << 10

// Config describes one repository, the branch the agent follows and how it writes.
type Config struct {
	// URL is the remote (https://, http://, ssh:// or scp-like user@host:path).
	URL string
	// Branch is the authoritative branch; default "main".
	Branch string
	// Path is the root inside the repository the agent reads and writes;
	// default the repository root. Nothing outside it is visible.
	Path string
	// Dir is where the persistent bare clone lives. Use CloneDir to derive a
	// stable per-repository directory from a data directory.
	Dir string
	// Auth authenticates against the remote; nil for anonymous access.
	Auth *Auth
	// MaxFileSize caps the size of a blob that may be read; default DefaultMaxFileSize.
	MaxFileSize int64
	// Limits caps the trees a listing decodes and the bytes a Round reads.
	Limits Limits
	// Shallow makes the initial clone fetch only the branch tip; later fetches
	// stay incremental.
	Shallow bool
	// AuthorName and AuthorEmail identify the agent in the commits it writes.
	AuthorName, AuthorEmail string
	// Signer signs the agent's commits when set (see NewSSHSigner, NewOpenPGPSigner).
	Signer git.Signer
	// Retry bounds how a rejected push is retried.
	Retry Retry
	// Now returns the commit time; default time.Now.
	Now func() time.Time
}

// Limits caps what reading a commit may cost; each cap is checked before the
// object it concerns is read. A zero field is no cap.
type Limits struct {
	// MaxTreeEntries caps the entries of one tree (directory), except for the
	// top trees that MaxTopTreeEntries caps.
	MaxTreeEntries int
	// MaxTopTreeEntries, when set, caps instead of MaxTreeEntries the entries
	// of the root (and of the trees leading to it) and of the directories
	// fewer than TopLevels levels below it: the directories that list one
	// entry per peer may be wider than the ones that hold files.
	MaxTopTreeEntries int
	// TopLevels is how many levels from the root MaxTopTreeEntries caps (the
	// root is level 0).
	TopLevels int
	// MaxDirectories caps the directories one listing descends into; the
	// directories beyond it are listed as skipped, never as absent.
	MaxDirectories int
	// MaxRoundBytes caps the sum of the sizes of the blobs one Round reads.
	MaxRoundBytes int64
}

// treeEntries is the cap on the entries of a tree level levels below the root.
func (l Limits) treeEntries(level int) int {
	if l.MaxTopTreeEntries > 0 && level < l.TopLevels {
		return l.MaxTopTreeEntries
	}
	return l.MaxTreeEntries
}

// levelOf is the level of the directory at path p, relative to the root
// (which is level 0, and never named so).
func levelOf(p string) int {
	return strings.Count(p, "/") + 1
}

// Retry bounds the retries of a push rejected because the branch moved.
// Delays grow exponentially from BaseDelay up to MaxDelay, with full jitter.
type Retry struct {
	// Attempts is the total number of push attempts; default 10.
	Attempts int
	// BaseDelay is the first backoff; default 50ms.
	BaseDelay time.Duration
	// MaxDelay caps a single backoff; default 2s.
	MaxDelay time.Duration
}

func (c *Config) setDefaults() error {
	if c.URL == "" {
		return errors.New("gitsync: URL is required")
	}
	if c.Dir == "" {
		return errors.New("gitsync: Dir is required")
	}
	if c.Branch == "" {
		c.Branch = "main"
	}
	root, err := cleanRoot(c.Path)
	if err != nil {
		return err
	}
	c.Path = root
	if c.MaxFileSize <= 0 {
		c.MaxFileSize = DefaultMaxFileSize
	}
	if c.AuthorName == "" {
		c.AuthorName = "gitpeer"
	}
	if c.AuthorEmail == "" {
		c.AuthorEmail = "gitpeer@localhost"
	}
	if c.Retry.Attempts <= 0 {
		c.Retry.Attempts = 10
	}
	if c.Retry.BaseDelay <= 0 {
		c.Retry.BaseDelay = 50 * time.Millisecond
	}
	if c.Retry.MaxDelay <= 0 {
		c.Retry.MaxDelay = 2 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}
