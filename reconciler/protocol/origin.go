package protocol

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
)

// An origin marks the document files of a kustomized directory before the
// build, so that every built document can be traced to the file it came from:
// a built document of kind K must come from the file K (a Tenant from
// tenant.yaml, never from a copy under another name). The mark is an
// annotation whose key is random for each build, so no file or patch of the
// directory can name it, and hence none can forge it.
type origin struct{ key string }

func newOrigin() (origin, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return origin{}, err
	}
	return origin{key: "gitpeer.io/origin-" + hex.EncodeToString(b)}, nil
}

// mark returns data with the annotation key=name added to its metadata. Data
// that is not one YAML mapping is returned as it is: kustomize refuses it, or
// builds an object without the mark, which check refuses.
func (o origin) mark(name string, data []byte) []byte {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yamlv3.MappingNode {
		return data
	}
	annotations := child(child(doc.Content[0], "metadata", true), "annotations", true)
	if annotations == nil {
		return data
	}
	annotations.Content = append(annotations.Content,
		&yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: o.key},
		&yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: name})
	out, err := yamlv3.Marshal(&doc)
	if err != nil {
		return data
	}
	return out
}

// check removes the mark from a built object (a mapping node) and returns an
// error unless it names want, the file of the object's kind.
func (o origin) check(obj *yamlv3.Node, want, kind string) error {
	annotations := child(child(obj, "metadata", false), "annotations", false)
	from := ""
	if annotations != nil {
		for i := 0; i+1 < len(annotations.Content); i += 2 {
			if annotations.Content[i].Value == o.key {
				from = annotations.Content[i+1].Value
				annotations.Content = append(annotations.Content[:i], annotations.Content[i+2:]...)
				break
			}
		}
	}
	switch {
	case from == "":
		return fmt.Errorf("%w: kustomize built a %s that does not come from %s (a built document must come from the file of its kind)", ErrInvalid, kind, want)
	case from != want:
		return fmt.Errorf("%w: kustomize built a %s from %s (a built document must come from the file of its kind, %s)", ErrInvalid, kind, from, want)
	}
	if len(annotations.Content) == 0 {
		removeKey(child(obj, "metadata", false), "annotations")
	}
	return nil
}

// child returns the value of key in the mapping n, creating an empty
// mapping there if create is set and key is absent. It returns nil when n is
// nil or not a mapping, or the value is not a mapping.
func child(n *yamlv3.Node, key string, create bool) *yamlv3.Node {
	if n == nil || n.Kind != yamlv3.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			if v := n.Content[i+1]; v.Kind == yamlv3.MappingNode {
				return v
			}
			return nil
		}
	}
	if !create {
		return nil
	}
	v := &yamlv3.Node{Kind: yamlv3.MappingNode, Tag: "!!map"}
	n.Content = append(n.Content, &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

// removeKey deletes key and its value from the mapping n.
func removeKey(n *yamlv3.Node, key string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
			return
		}
	}
}
