package layout

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// MaxFileSize is the largest document gitpeer decodes. gitsync enforces the cap
// before reading a blob; Decode enforces it again for files read from disk.
const MaxFileSize = 64 << 10

// ErrInvalid is wrapped by every error about a document's content.
var ErrInvalid = errors.New("invalid document")

// decodeStrict decodes exactly one YAML document without anchors or aliases
// into out, refusing unknown and duplicate fields.
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
	if err := refuseAliases(&doc); err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, out); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// refuseAliases walks the node tree and refuses anchors and aliases, which
// gitpeer's documents never need and which make alias bombs possible.
func refuseAliases(n *yamlv3.Node) error {
	if n.Kind == yamlv3.AliasNode || n.Anchor != "" {
		return fmt.Errorf("%w: YAML anchors and aliases are not allowed (line %d)", ErrInvalid, n.Line)
	}
	for _, c := range n.Content {
		if err := refuseAliases(c); err != nil {
			return err
		}
	}
	return nil
}
