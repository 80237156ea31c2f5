package gitsync

import (
	"fmt"
	"strings"
)

// validName reports whether a single tree-entry name is safe: not empty, not
// "." or "..", and free of separators and NUL, so that joining it under the
// root can never point outside the root.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}

// cleanRel validates a path relative to the root ("provider/consumer/tenant.yaml")
// and returns its components. Absolute paths and "", "." or ".." components are
// refused rather than resolved, so "a/../b" is an error, not "b".
func cleanRel(p string) ([]string, error) {
	if p == "" || strings.HasPrefix(p, "/") {
		return nil, &FileError{Path: p, Reason: ErrUnsafePath, Detail: "must be a non-empty relative path"}
	}
	parts := strings.Split(p, "/")
	for _, part := range parts {
		if !validName(part) {
			return nil, &FileError{Path: p, Reason: ErrUnsafePath, Detail: fmt.Sprintf("invalid component %q", part)}
		}
	}
	return parts, nil
}

// cleanRoot normalises the configured root: "", "." and "/" mean the
// repository root; surrounding slashes are dropped; each component must be valid.
func cleanRoot(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" || p == "." {
		return "", nil
	}
	if _, err := cleanRel(p); err != nil {
		return "", fmt.Errorf("gitsync: root path: %w", err)
	}
	return p, nil
}

// joinPath joins non-empty path parts with "/".
func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
