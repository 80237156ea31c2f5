// Package quickstart runs docs/quickstart.md as written: its suite extracts the page's shell blocks
// and runs them in order against two control planes and a Git server, so the page cannot rot.
//
// The page marks its blocks with the fence's info string (GitHub shows only the language):
// "```sh" runs verbatim; "```sh {variables}" holds the reader's settings, which the suite runs
// before every block and then overrides with its own environment's values; "```sh {pod-starts}"
// waits for the agents' pods, which the suite replaces by running the installed agents (its
// control planes have no kubelet); "```text {output}" right after a shell block holds lines its
// output must contain. Other blocks (yaml, plain text) are for the reader only.
package quickstart

import (
	"fmt"
	"strings"
)

// Tags of the fences' info strings.
const (
	TagVariables = "variables"
	TagPodStarts = "pod-starts"
	TagOutput    = "output"
)

// Block is a shell block of the page.
type Block struct {
	// Tag is TagVariables, TagPodStarts or "" (run verbatim).
	Tag string
	// Line is the line of the opening fence; Section the heading above it.
	Line    int
	Section string
	// Script is the block's text.
	Script string
	// Output holds the lines of the {output} block that follows it, if any.
	Output []string
}

// Name names the block in failures: its line and section.
func (b Block) Name() string { return fmt.Sprintf("line %d (%q)", b.Line, b.Section) }

// Parse returns the shell blocks of a Markdown page, in order. A fence the page does not close, an
// unknown tag or an {output} block that follows no shell block is an error naming its line.
func Parse(page string) ([]Block, error) {
	var blocks []Block
	section := ""
	lastFenced := "" // the language of the previous fenced block
	lines := strings.Split(page, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "#") {
			section = strings.TrimSpace(strings.TrimLeft(line, "#"))
			continue
		}
		if !strings.HasPrefix(line, "```") {
			continue
		}
		start := i + 1
		lang, tag, err := infoString(strings.TrimPrefix(line, "```"))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: the code block is not closed", start)
		}
		switch {
		case tag == TagOutput:
			if lastFenced != "sh" || len(blocks) == 0 {
				return nil, fmt.Errorf("line %d: an {output} block must follow a sh block", start)
			}
			for _, l := range body {
				if l = strings.TrimSpace(l); l != "" {
					blocks[len(blocks)-1].Output = append(blocks[len(blocks)-1].Output, l)
				}
			}
		case lang == "sh":
			blocks = append(blocks, Block{Tag: tag, Line: start, Section: section, Script: strings.Join(body, "\n") + "\n"})
		case tag != "":
			return nil, fmt.Errorf("line %d: {%s} on a %q block: only sh blocks are tagged, but {output}", start, tag, lang)
		}
		lastFenced = lang
	}
	return blocks, nil
}

// infoString splits a fence's info string, e.g. "sh {variables}", into its language and tag.
func infoString(info string) (lang, tag string, err error) {
	lang, rest, _ := strings.Cut(strings.TrimSpace(info), " ")
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return lang, "", nil
	}
	inner, open := strings.CutPrefix(rest, "{")
	inner, closed := strings.CutSuffix(inner, "}")
	if open && closed && (inner == TagVariables || inner == TagPodStarts || inner == TagOutput) {
		return lang, inner, nil
	}
	return "", "", fmt.Errorf("unknown info string %q: tags are {%s}, {%s} and {%s}", info, TagVariables, TagPodStarts, TagOutput)
}

// Missing returns the lines of want that no line of output holds, both compared with their runs of
// white space made one space (a table's column widths vary with its content).
func Missing(output string, want []string) []string {
	have := map[string]bool{}
	for _, l := range strings.Split(output, "\n") {
		have[strings.Join(strings.Fields(l), " ")] = true
	}
	var missing []string
	for _, w := range want {
		if !have[strings.Join(strings.Fields(w), " ")] {
			missing = append(missing, w)
		}
	}
	return missing
}
