package gitsync

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	fluxknownhosts "github.com/fluxcd/pkg/ssh/knownhosts"
	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
)

// knownHostsCallback returns a host-key callback that accepts only the keys in
// knownHosts, plus the host-key algorithms to negotiate for the URL's host so
// the server is asked for a key type we can check.
func knownHostsCallback(knownHosts []byte, rawURL string) (ssh.HostKeyCallback, []string, error) {
	check, _, err := fluxknownhosts.New(knownHosts)
	if err != nil {
		return nil, nil, fmt.Errorf("gitsync: known_hosts: %w", err)
	}
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := check(hostname, remote, key)
		switch {
		case err == nil:
			return nil
		case knownhosts.IsHostKeyChanged(err):
			return fmt.Errorf("%w: %s presented %s key %s, which does not match known_hosts",
				ErrHostKeyMismatch, hostname, key.Type(), ssh.FingerprintSHA256(key))
		case knownhosts.IsHostUnknown(err):
			return fmt.Errorf("%w: %s is not in known_hosts", ErrHostKeyMismatch, hostname)
		}
		return fmt.Errorf("%w: %v", ErrHostKeyMismatch, err)
	}
	// The algorithms flux returns span every host in the file and name key
	// types only (ssh-rsa, not rsa-sha2-*); skeema's lookup is per host and
	// adds the SHA-2 RSA algorithms that current OpenSSH servers require.
	return cb, knownhosts.HostKeyAlgorithms(check, sshHostPort(rawURL)), nil
}

// insecureIgnoreHostKey accepts any host key; used only on explicit opt-in.
func insecureIgnoreHostKey() ssh.HostKeyCallback {
	return ssh.InsecureIgnoreHostKey() //nolint:gosec // explicit opt-in via Auth.InsecureSkipHostKeyCheck
}

// sshHostPort returns host:port for an ssh:// or scp-like URL.
func sshHostPort(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil && u.Scheme == "ssh" {
		if u.Port() == "" {
			return net.JoinHostPort(u.Hostname(), "22")
		}
		return u.Host
	}
	host := rawURL
	if at := strings.Index(host, "@"); at >= 0 {
		host = host[at+1:]
	}
	if colon := strings.Index(host, ":"); colon >= 0 {
		host = host[:colon]
	}
	return net.JoinHostPort(host, "22")
}
