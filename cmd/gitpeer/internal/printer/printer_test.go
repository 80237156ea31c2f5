package printer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestOutputCheck(t *testing.T) {
	o := AddFlag(&cobra.Command{}, Table, JSON, YAML, Wide)
	for format, ok := range map[string]bool{"": true, "json": true, "yaml": true, "wide": true, "name": false, "xml": false} {
		o.Format = format
		err := o.Check()
		if (err == nil) != ok {
			t.Errorf("-o %q: %v", format, err)
		}
		if want := `--output (-o) "` + format + `" is not supported here: use one of json, yaml, wide`; !ok && err.Error() != want {
			t.Errorf("-o %q: %q, want %q", format, err, want)
		}
	}
}

func TestWriteNames(t *testing.T) {
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	var out bytes.Buffer
	if err := WriteNames(&out, secret, secret); err != nil || out.String() != "secret/a\nsecret/a\n" {
		t.Errorf("%q, %v", out.String(), err)
	}
	if err := WriteNames(&out, &corev1.Secret{}); err == nil {
		t.Error("an object without its kind was named")
	}
	list := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: []runtime.RawExtension{{Object: secret}}}
	out.Reset()
	if err := WriteObject(&out, Name, list); err != nil || out.String() != "secret/a\n" {
		t.Errorf("-o name of a List: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := WriteObject(&out, JSON, list); err != nil || !strings.Contains(out.String(), `"kind": "Secret"`) {
		t.Errorf("-o json of a List: %q, %v", out.String(), err)
	}
}
