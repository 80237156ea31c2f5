// Package crd embeds the CustomResourceDefinitions generated into bases/ by `make generate`, so
// that test suites and tools can install them without reading files at run time.
package crd

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Bases holds the generated CRD manifests, bases/<group>_<plural>.yaml.
//
//go:embed bases/*.yaml
var Bases embed.FS

// Load parses every CRD in Bases, strictly (unknown fields are an error), sorted by file name.
func Load() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(Bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		data, err := Bases.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", path.Base(f), err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
