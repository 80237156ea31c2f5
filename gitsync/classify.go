package gitsync

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// classify wraps a transport error in the matching sentinel so callers can
// tell auth failures, host-key problems and unreachable servers apart.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	msg := err.Error()
	var netErr net.Error
	switch {
	case errors.Is(err, ErrHostKeyMismatch):
		return fmt.Errorf("%s: %w", op, err)
	case errors.Is(err, transport.ErrAuthenticationRequired),
		errors.Is(err, transport.ErrAuthorizationFailed),
		strings.Contains(msg, "unable to authenticate"):
		sentinel = ErrAuthFailed
	case strings.Contains(msg, "knownhosts:"), strings.Contains(msg, "host key"):
		sentinel = ErrHostKeyMismatch
	case errors.Is(err, transport.ErrRepositoryNotFound),
		errors.As(err, &netErr),
		strings.Contains(msg, "connection refused"),
		strings.Contains(msg, "no such host"):
		sentinel = ErrUnreachable
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, sentinel, err)
}
