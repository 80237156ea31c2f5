package docscheck

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

// CLI reads the commands and flags of a gitpeer binary from its help (cobra's usage template),
// so the check follows whatever commands the binary has, however they are built.
type CLI struct {
	Binary string
	cache  map[string]*command
}

type command struct {
	subcommands map[string]bool
	flags       map[string]bool // --name and -x, the command's own, inherited and help
}

func (c *command) names() []string {
	var n []string
	for s := range c.subcommands {
		n = append(n, s)
	}
	slices.Sort(n)
	return n
}

// flagLine matches a flag of cobra's help: "  -o, --output string   ..." or "      --base string".
var flagLine = regexp.MustCompile(`^\s+(?:-([^-\s]), )?--([^\s=]+)`)

// command runs `gitpeer <path> --help` and reads its "Flags:" sections (Flags, Global Flags) and
// its command sections (Available Commands, Additional Commands, command groups).
func (c *CLI) command(path []string) (*command, error) {
	key := strings.Join(path, " ")
	if cmd, ok := c.cache[key]; ok {
		return cmd, nil
	}
	out, err := exec.Command(c.Binary, append(slices.Clone(path), "--help")...).Output()
	if err != nil {
		return nil, fmt.Errorf("gitpeer %s --help: %w", key, err)
	}
	cmd := &command{subcommands: map[string]bool{}, flags: map[string]bool{}}
	section := ""
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		if line != "" && !strings.HasPrefix(line, " ") {
			if strings.HasSuffix(line, ":") {
				section = line
			} else if section != "" {
				section = "other" // prose after the sections (Use "gitpeer [command] --help" ...)
			}
			continue
		}
		switch {
		case section == "" || section == "other" || section == "Usage:" || section == "Aliases:" || section == "Examples:":
		case strings.HasSuffix(section, "Flags:"):
			if m := flagLine.FindStringSubmatch(line); m != nil {
				cmd.flags["--"+m[2]] = true
				if m[1] != "" {
					cmd.flags["-"+m[1]] = true
				}
			}
		default:
			if f := strings.Fields(line); len(f) > 0 {
				cmd.subcommands[f[0]] = true
			}
		}
	}
	if len(cmd.flags) == 0 {
		return nil, fmt.Errorf("gitpeer %s --help lists no flags (not cobra's usage template?):\n%s", key, out)
	}
	if c.cache == nil {
		c.cache = map[string]*command{}
	}
	c.cache[key] = cmd
	return cmd, nil
}

// ruleLine matches a Makefile rule: targets, then ':' or '::' not followed by '=' (an assignment).
var ruleLine = regexp.MustCompile(`^([^:=#\t][^:=#]*?)\s*::?(?:[^=]|$)`)

// MakeTargets reads the rules of a Makefile: each target it defines, with the lines of the rules
// naming it. Targets made of variables and special targets (.PHONY) are left out, as docs name
// neither. It reads the file rather than `make -p`'s database, which merges the rules of a
// target: a target with two rule lines is defined in two places, which readers miss.
func MakeTargets(makefile string) (map[string][]int, error) {
	f, err := os.Open(makefile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	targets := map[string][]int{}
	scanner := bufio.NewScanner(f)
	n, continued, inDefine := 0, false, false
	for scanner.Scan() {
		n++
		line := scanner.Text()
		wasContinued := continued
		continued = strings.HasSuffix(line, "\\")
		switch {
		case wasContinued:
		case strings.HasPrefix(line, "define "):
			inDefine = true
		case strings.HasPrefix(line, "endef"):
			inDefine = false
		case inDefine:
		default:
			m := ruleLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			for _, t := range strings.Fields(m[1]) {
				if !strings.Contains(t, "$") && !strings.HasPrefix(t, ".") {
					targets[t] = append(targets[t], n)
				}
			}
		}
	}
	return targets, scanner.Err()
}
