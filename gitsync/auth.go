package gitsync

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// Secret data keys, as in Flux's GitRepository spec.secretRef.
const (
	SecretUsername    = "username"
	SecretPassword    = "password"
	SecretBearerToken = "bearerToken"
	SecretCA          = "ca.crt"
	SecretIdentity    = "identity"
	SecretKnownHosts  = "known_hosts"
)

// Auth holds the credentials for one remote.
type Auth struct {
	// Username and Password are HTTP basic-auth credentials. Over SSH,
	// Password is the passphrase of Identity (as in Flux).
	Username, Password string
	// BearerToken is sent as an HTTP Authorization: Bearer header.
	BearerToken string
	// CA is a PEM bundle trusted in addition to the system roots for HTTPS.
	CA []byte
	// Identity is a PEM (OpenSSH or PKCS) SSH private key.
	Identity []byte
	// KnownHosts holds known_hosts lines for the SSH server. Required for SSH
	// unless InsecureSkipHostKeyCheck is set.
	KnownHosts []byte
	// InsecureSkipHostKeyCheck accepts any SSH host key. Only for explicit opt-in.
	InsecureSkipHostKeyCheck bool
}

// AuthFromSecret builds Auth from a Secret's data using Flux's key names
// (username, password, bearerToken, ca.crt, identity, known_hosts).
func AuthFromSecret(data map[string][]byte) (*Auth, error) {
	a := &Auth{
		Username:    string(data[SecretUsername]),
		Password:    string(data[SecretPassword]),
		BearerToken: string(data[SecretBearerToken]),
		CA:          data[SecretCA],
		Identity:    data[SecretIdentity],
		KnownHosts:  data[SecretKnownHosts],
	}
	if a.BearerToken != "" && (a.Username != "" || (a.Password != "" && len(a.Identity) == 0)) {
		return nil, errors.New("gitsync: secret sets both bearerToken and basic-auth credentials")
	}
	return a, nil
}

// isSSH reports whether rawURL is reached over SSH (ssh:// or scp-like user@host:path).
func isSSH(rawURL string) bool {
	if strings.HasPrefix(rawURL, "ssh://") {
		return true
	}
	return !strings.Contains(rawURL, "://") && strings.Contains(rawURL, ":")
}

// sshUser returns the user in an SSH URL, default "git".
func sshUser(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil && u.User != nil && u.User.Username() != "" {
		return u.User.Username()
	}
	if at := strings.Index(rawURL, "@"); at > 0 && !strings.Contains(rawURL[:at], "/") {
		return rawURL[:at]
	}
	return "git"
}

// method returns the go-git auth method for rawURL.
func (a *Auth) method(rawURL string) (transport.AuthMethod, error) {
	if isSSH(rawURL) {
		return a.sshMethod(rawURL)
	}
	switch {
	case a == nil:
		return nil, nil
	case a.BearerToken != "":
		return &githttp.TokenAuth{Token: a.BearerToken}, nil
	case a.Username != "" || a.Password != "":
		return &githttp.BasicAuth{Username: a.Username, Password: a.Password}, nil
	}
	return nil, nil
}

func (a *Auth) sshMethod(rawURL string) (transport.AuthMethod, error) {
	if a == nil || len(a.Identity) == 0 {
		return nil, errors.New("gitsync: ssh URL needs an identity (private key)")
	}
	keys, err := gitssh.NewPublicKeys(sshUser(rawURL), a.Identity, a.Password)
	if err != nil {
		return nil, fmt.Errorf("gitsync: ssh identity: %w", err)
	}
	if a.InsecureSkipHostKeyCheck {
		keys.HostKeyCallback = insecureIgnoreHostKey()
		return keys, nil
	}
	if len(a.KnownHosts) == 0 {
		return nil, errors.New("gitsync: ssh URL needs known_hosts (or an explicit InsecureSkipHostKeyCheck)")
	}
	cb, algos, err := knownHostsCallback(a.KnownHosts, rawURL)
	if err != nil {
		return nil, err
	}
	keys.HostKeyCallback = cb
	keys.HostKeyAlgorithms = algos
	return keys, nil
}

// caBundle returns the extra CA bundle for HTTPS, if any.
func (a *Auth) caBundle() []byte {
	if a == nil {
		return nil
	}
	return a.CA
}
