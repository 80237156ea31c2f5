package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"golang.org/x/text/cases"
	sigsjson "sigs.k8s.io/json"
)

// MaxFileSize is the largest document gitpeer decodes. gitsync enforces the cap
// before reading a blob; Decode enforces it again for files read from disk.
const MaxFileSize = 64 << 10

// ErrInvalid is wrapped by every error about a document's content.
var ErrInvalid = errors.New("invalid document")

// decodeStrict decodes exactly one YAML document into out, strictly and
// case-sensitively: the YAML must pass checkNode (no anchors, aliases, merge
// keys, duplicate or case-variant keys, only string keys), and every field
// must be a field of out spelled exactly as out spells it. A consumer's
// `tenantcondition` is an unknown field, never the admin's `tenantCondition`.
func decodeStrict(data []byte, out any) error {
	if len(data) > MaxFileSize {
		return fmt.Errorf("%w: file is %d bytes, the limit is %d", ErrInvalid, len(data), MaxFileSize)
	}
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var doc yamlv3.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: file is empty", ErrInvalid)
		}
		return fmt.Errorf("%w: malformed YAML: %v", ErrInvalid, err)
	}
	var extra yamlv3.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: file holds more than one YAML document", ErrInvalid)
	}
	if err := checkNode(&doc); err != nil {
		return err
	}
	var v any
	if err := doc.Decode(&v); err != nil {
		return fmt.Errorf("%w: malformed YAML: %v", ErrInvalid, err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	strict, err := sigsjson.UnmarshalStrict(data, out)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(msgs, "; "))
	}
	return nil
}

// checkNode walks a YAML node tree and refuses what gitpeer's documents never
// need and what lets one file be read two ways: anchors and aliases (alias
// bombs), merge keys (`<<`, which copy fields in), keys that are not strings,
// and, within one mapping, duplicate keys and keys equal under Unicode case
// folding (encoding/json matches field names case-insensitively, so
// `tenantcondition` beside `tenantCondition` could win in another decoder).
func checkNode(n *yamlv3.Node) error {
	if n.Kind == yamlv3.AliasNode || n.Anchor != "" {
		return fmt.Errorf("%w: YAML anchors and aliases are not allowed (line %d)", ErrInvalid, n.Line)
	}
	if n.Kind == yamlv3.MappingNode {
		if err := checkKeys(n); err != nil {
			return err
		}
	}
	for _, c := range n.Content {
		if err := checkNode(c); err != nil {
			return err
		}
	}
	return nil
}

// checkKeys refuses merge keys, keys that are not strings, and duplicate or
// case-variant keys in the mapping n.
func checkKeys(n *yamlv3.Node) error {
	fold := cases.Fold()
	seen := map[string]string{}
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		switch {
		case k.Tag == "!!merge" || k.Value == "<<":
			return fmt.Errorf("%w: YAML merge keys (<<) are not allowed (line %d)", ErrInvalid, k.Line)
		case k.Kind != yamlv3.ScalarNode || k.Tag != "!!str":
			return fmt.Errorf("%w: mapping keys must be strings (line %d)", ErrInvalid, k.Line)
		}
		folded := fold.String(k.Value)
		if prev, ok := seen[folded]; ok && prev == k.Value {
			return fmt.Errorf("%w: duplicate key %q (line %d)", ErrInvalid, k.Value, k.Line)
		} else if ok {
			return fmt.Errorf("%w: keys %q and %q differ only in case (line %d): field names are case-sensitive", ErrInvalid, prev, k.Value, k.Line)
		}
		seen[folded] = k.Value
	}
	return nil
}
