package quickstart

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	page := "# Title\n\n## Settings\n```sh {variables}\nexport A=1\n```\n## Run\n```yaml\nkind: X\n```\n" +
		"```sh\necho hi\n```\n\n```text {output}\nhi  there\n\n```\n```sh {pod-starts}\nwait\n```\n"
	blocks, err := Parse(page)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 {
		t.Fatalf("%d blocks, want 3: %+v", len(blocks), blocks)
	}
	if b := blocks[0]; b.Tag != TagVariables || b.Script != "export A=1\n" || b.Section != "Settings" || b.Line != 4 {
		t.Errorf("variables block: %+v", b)
	}
	if b := blocks[1]; b.Tag != "" || b.Script != "echo hi\n" || b.Section != "Run" || strings.Join(b.Output, "|") != "hi  there" {
		t.Errorf("plain block: %+v", b)
	}
	if b := blocks[2]; b.Tag != TagPodStarts || b.Output != nil {
		t.Errorf("pod-starts block: %+v", b)
	}
	for page, want := range map[string]string{
		"```sh\necho\n":                       "line 1: the code block is not closed",
		"x\n```sh {varibles}\n```\n":          "line 2: unknown info string",
		"```yaml\n```\n```text {output}\n```": "line 3: an {output} block must follow a sh block",
		"```yaml {variables}\n```\n":          "line 1: {variables} on a \"yaml\" block",
	} {
		if _, err := Parse(page); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", page, err, want)
		}
	}
}

func TestMissing(t *testing.T) {
	out := "ATTRIBUTE   VALUE\nUsername    cluster-b\nyes\n"
	if m := Missing(out, []string{"Username cluster-b", "yes"}); m != nil {
		t.Errorf("missing %q", m)
	}
	if m := Missing(out, []string{"Username cluster-a", "no", "ye"}); len(m) != 3 {
		t.Errorf("missing %q, want all three", m)
	}
}
