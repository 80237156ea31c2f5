package gitsync

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// classify wraps a transport error in the matching sentinel so callers can
// tell auth failures, host-key and certificate problems, missing repositories
// and unreachable servers apart.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrHostKeyMismatch) {
		return fmt.Errorf("%s: %w", op, err)
	}
	sentinel := sentinelOf(err)
	if sentinel == nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, sentinel, err)
}

// sentinelOf returns the sentinel a transport error belongs to, or nil.
// Certificate errors are tested before network errors: both arrive wrapped in
// a *url.Error, which is a net.Error.
func sentinelOf(err error) error {
	msg := err.Error()
	var netErr net.Error
	var tlsErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired),
		errors.Is(err, transport.ErrAuthorizationFailed),
		strings.Contains(msg, "unable to authenticate"):
		return ErrAuthFailed
	case strings.Contains(msg, "knownhosts:"), strings.Contains(msg, "host key"):
		return ErrHostKeyMismatch
	case errors.As(err, &tlsErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalid):
		return ErrCertificateUntrusted
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return ErrRepositoryNotFound
	case errors.As(err, &netErr),
		strings.Contains(msg, "connection refused"),
		strings.Contains(msg, "connection reset"),
		strings.Contains(msg, "no such host"):
		return ErrUnreachable
	}
	return nil
}
