package crypto

import (
	"bytes"
	"encoding/pem"
)

// maxPEMSize caps every PEM input before it is parsed. Real keys, CSRs and
// CA bundles are a few kilobytes.
const maxPEMSize = 64 << 10

// PEM block types used by Liqo and gitpeer.
const (
	pemPrivateKey         = "PRIVATE KEY"
	pemPublicKey          = "PUBLIC KEY"
	pemCertificateRequest = "CERTIFICATE REQUEST"
	pemCertificate        = "CERTIFICATE"
)

// decodePEMBlocks returns the DER contents of the PEM blocks that make up
// data. Every block must have type blockType and no headers, and data must
// hold nothing else: no text before, between or after the blocks, except
// white space when allowSpace is set. Failures are reported under rule.
func decodePEMBlocks(data []byte, blockType string, allowSpace bool, rule Rule) ([][]byte, error) {
	if len(data) > maxPEMSize {
		return nil, newError(rule, nil, "%s PEM is %d bytes, more than the %d allowed", blockType, len(data), maxPEMSize)
	}
	var ders [][]byte
	for rest := data; ; {
		if allowSpace {
			rest = bytes.TrimLeft(rest, " \t\r\n")
		}
		if len(rest) == 0 {
			break
		}
		if !bytes.HasPrefix(rest, []byte("-----BEGIN ")) {
			return nil, newError(rule, nil, "%s PEM has data outside its PEM block", blockType)
		}
		block, next := pem.Decode(rest)
		switch {
		case block == nil:
			return nil, newError(rule, nil, "%s PEM is not valid PEM", blockType)
		case block.Type != blockType:
			return nil, newError(rule, nil, "PEM block type is %q, want %q", block.Type, blockType)
		case len(block.Headers) != 0:
			return nil, newError(rule, nil, "%s PEM block has headers", blockType)
		}
		ders = append(ders, block.Bytes)
		rest = next
	}
	if len(ders) == 0 {
		return nil, newError(rule, nil, "no %s PEM block found", blockType)
	}
	return ders, nil
}

// decodeSinglePEM is decodePEMBlocks for a document that must be exactly one
// block with nothing around it.
func decodeSinglePEM(data []byte, blockType string, rule Rule) ([]byte, error) {
	ders, err := decodePEMBlocks(data, blockType, false, rule)
	if err != nil {
		return nil, err
	}
	if len(ders) != 1 {
		return nil, newError(rule, nil, "found %d %s PEM blocks, want exactly one", len(ders), blockType)
	}
	return ders[0], nil
}
