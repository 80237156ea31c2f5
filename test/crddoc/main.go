// Command crddoc writes the field reference of docs/configuration.md from the PeeringRepository CRD
// (config/crd/bases, generated from the API types' doc comments and markers by `make generate`,
// which runs this too): one table row per spec field with its type, default, description and
// validation messages, between two markers; the prose around them is left as written.
//
//	go run ./test/crddoc [-crd FILE] [-doc FILE]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The generated table sits between these lines of the document.
const (
	Begin = "<!-- Generated from the CRD by `make generate` (test/crddoc): edit the API types' doc comments, not this table. -->"
	End   = "<!-- End of the generated table. -->"
)

func main() {
	crdFile := flag.String("crd", "config/crd/bases/gitpeer.io_peeringrepositories.yaml", "the CRD")
	docFile := flag.String("doc", "docs/configuration.md", "the document holding the table between its markers")
	flag.Parse()
	doc, err := Update(*crdFile, *docFile)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*docFile, doc, 0o644); err != nil {
		log.Fatal(err)
	}
}

// Update returns the document with its table generated again from the CRD.
func Update(crdFile, docFile string) ([]byte, error) {
	data, err := os.ReadFile(crdFile)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", crdFile, err)
	}
	table, err := Table(&crd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", crdFile, err)
	}
	doc, err := os.ReadFile(docFile)
	if err != nil {
		return nil, err
	}
	before, rest, ok := bytes.Cut(doc, []byte(Begin+"\n"))
	_, after, ok2 := bytes.Cut(rest, []byte(End+"\n"))
	if !ok || !ok2 {
		return nil, fmt.Errorf("%s: no lines %q and %q around the table", docFile, Begin, End)
	}
	return slices.Concat(before, []byte(Begin+"\n"), []byte(table), []byte(End+"\n"), after), nil
}

// Table is the Markdown table of the spec fields of the CRD's storage version.
func Table(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	for _, v := range crd.Spec.Versions {
		if !v.Storage || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
		if !ok {
			return "", errors.New("the schema has no spec")
		}
		var b strings.Builder
		b.WriteString("| field (`spec.`) | type | default | description |\n|---|---|---|---|\n")
		if err := rows(&b, "", &spec); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	return "", errors.New("no storage version with a schema")
}

// rows writes a row per property of an object schema, in name order, each followed by its own
// properties (an array's by those of its items, path[].field).
func rows(b *strings.Builder, prefix string, s *apiextensionsv1.JSONSchemaProps) error {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := s.Properties[n]
		def := ""
		if p.Default != nil {
			def = "`" + string(p.Default.Raw) + "`"
			var str string
			if json.Unmarshal(p.Default.Raw, &str) == nil {
				def = "`" + str + "`"
			}
		}
		if slices.Contains(s.Required, n) {
			def = "required"
		}
		desc := text(p.Description)
		validations := p.XValidations
		if p.Items != nil && p.Items.Schema != nil {
			validations = append(validations, p.Items.Schema.XValidations...)
		}
		var checks []string
		for _, v := range validations {
			if v.Message != "" {
				checks = append(checks, text(v.Message))
			}
		}
		if len(checks) > 0 {
			desc += " Validated: " + strings.Join(checks, "; ") + "."
		}
		if p.Description == "" {
			return fmt.Errorf("%s%s has no description: give its API type field a doc comment", prefix, n)
		}
		fmt.Fprintf(b, "| `%s%s` | %s | %s | %s |\n", prefix, n, typeOf(&p), def, desc)
		switch {
		case p.Type == "object":
			if err := rows(b, prefix+n+".", &p); err != nil {
				return err
			}
		case p.Type == "array" && p.Items != nil && p.Items.Schema != nil && p.Items.Schema.Type == "object":
			if err := rows(b, prefix+n+"[].", p.Items.Schema); err != nil {
				return err
			}
		}
	}
	return nil
}

// typeOf is a property's type as a reader writes it: string, []string, object, with its
// enumeration or format.
func typeOf(p *apiextensionsv1.JSONSchemaProps) string {
	t := p.Type
	if t == "array" && p.Items != nil && p.Items.Schema != nil {
		t = "[]" + p.Items.Schema.Type
	}
	if len(p.Enum) > 0 {
		var values []string
		for _, e := range p.Enum {
			values = append(values, "`"+strings.Trim(string(e.Raw), `"`)+"`")
		}
		t += ": " + strings.Join(values, ", ")
	}
	return t
}

// text is a description as one table cell: lines joined, and what Markdown or GitHub's HTML
// filter would take for markup (a | ends the cell, <providerID> is an unknown tag, * and _
// emphasis) escaped.
func text(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`").Replace(s)
}
