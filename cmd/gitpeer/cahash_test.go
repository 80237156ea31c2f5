package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestCAHash prints kubeadm's hash of its own test CA, from a file and from
// standard input, and fails on a file that holds no CA.
func TestCAHash(t *testing.T) {
	const kubeadm = "sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3\n"
	const file = "../../crypto/testdata/kubeadm-pubkeypin-cert.pem"
	pemData, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	run := func(stdin []byte, args ...string) (string, error) {
		cmd := newRootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetIn(bytes.NewReader(stdin))
		cmd.SetArgs(append([]string{"ca-hash"}, args...))
		err := cmd.Execute()
		return out.String(), err
	}
	if out, err := run(nil, file); err != nil || out != kubeadm {
		t.Errorf("ca-hash FILE = %q, %v; want %q", out, err, kubeadm)
	}
	if out, err := run(append(append([]byte{}, pemData...), pemData...), "-"); err != nil || out != kubeadm+kubeadm {
		t.Errorf("ca-hash - (two certificates) = %q, %v", out, err)
	}
	if _, err := run(nil, "cahash.go"); err == nil || !strings.Contains(err.Error(), "cahash.go:") {
		t.Errorf("ca-hash of a Go file: err = %v", err)
	}
}
