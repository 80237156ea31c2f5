package docscheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// target is a word that may be a make target, and command one that may be a gitpeer command;
// placeholders (<target>, PATH, ...) and versions (gitpeer 0.1.0, as `gitpeer version` prints)
// are neither.
var (
	target      = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
	commandName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// checkCode checks the make and gitpeer command lines in a code span or block. In a block whose
// commands have a prompt ("$ "), the lines without one are their output, and not checked.
func (c *Checker) checkCode(file string, code located) []Problem {
	var problems []Problem
	lines := strings.Split(code.dest, "\n")
	prompted := slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "$ ") })
	for i := 0; i < len(lines); i++ {
		first, line := i, lines[i]
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) { // a continued line
			i++
			line = strings.TrimSuffix(line, "\\") + " " + lines[i]
		}
		if prompted && !strings.HasPrefix(line, "$ ") {
			continue
		}
		for _, words := range commands(line) {
			for _, msg := range c.checkCommand(words) {
				problems = append(problems, Problem{file, code.line + first, msg})
			}
		}
	}
	return problems
}

// commands splits a shell line into its simple commands' words: at ;, &&, ||, |, $( and ( and
// before a comment. A shell prompt ($ ) is dropped.
func commands(line string) [][]string {
	var all [][]string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			all = append(all, cur)
		}
		cur = nil
	}
	for i, w := range strings.Fields(line) {
		if i == 0 && w == "$" {
			continue
		}
		if strings.HasPrefix(w, "#") {
			break
		}
		switch w {
		case ";", "&&", "||", "|", "(", ")", "{", "}", "!", "then", "do", "else":
			flush()
			continue
		}
		for _, p := range []string{"$(", "(", "`"} {
			if rest, ok := strings.CutPrefix(w, p); ok {
				flush()
				w = rest
			}
		}
		end := false
		for _, s := range []string{";", ")", "`"} {
			if rest, ok := strings.CutSuffix(w, s); ok && !strings.HasSuffix(w, "\\"+s) {
				w, end = rest, true
			}
		}
		if w != "" {
			cur = append(cur, w)
		}
		if end {
			flush()
		}
	}
	flush()
	return all
}

// checkCommand checks one simple command: `make ...` or one calling gitpeer.
func (c *Checker) checkCommand(words []string) []string {
	if words[0] == "make" && c.Targets != nil {
		return c.checkMake(words[1:])
	}
	if c.CLI == nil {
		return nil
	}
	for i, w := range words {
		if w == "gitpeer" || strings.HasSuffix(w, "/gitpeer") {
			// At the start of a command (or after `run`/`run:`), the words after gitpeer must
			// be its commands and flags; elsewhere (`helm install gitpeer oci://...`) gitpeer
			// is a name, unless a gitpeer command follows it.
			strict := i == 0 || words[i-1] == "run" || words[i-1] == "run:"
			return c.checkGitpeer(words[i+1:], strict)
		}
	}
	return nil
}

// checkMake checks the targets of `make` arguments; VAR=value and options are skipped.
func (c *Checker) checkMake(args []string) []string {
	var msgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" || a == "-f" || a == "-j":
			i++ // their value
		case strings.HasPrefix(a, "-") || strings.Contains(a, "="):
		case target.MatchString(a) && !c.Targets[a]:
			msgs = append(msgs, fmt.Sprintf("make %s: the Makefile has no target %q", strings.Join(args, " "), a))
		}
	}
	return msgs
}

// checkGitpeer checks the commands and flags of the words after `gitpeer`.
func (c *Checker) checkGitpeer(args []string, strict bool) []string {
	cmdPath := []string{}
	cmd, err := c.CLI.command(cmdPath)
	if err != nil {
		return []string{err.Error()}
	}
	var flags []string
	argSeen, flagsEnded := false, false
	for _, a := range args {
		a = strings.TrimLeft(strings.TrimRight(a, "],}"), "[{")
		switch {
		case a == "--":
			flagsEnded = true
		case len(a) > 1 && strings.HasPrefix(a, "-") && !flagsEnded:
			flags = append(flags, flagName(a))
		case argSeen:
		case cmd.subcommands[a]:
			cmdPath = append(cmdPath, a)
			if cmd, err = c.CLI.command(cmdPath); err != nil {
				return []string{err.Error()}
			}
		case len(cmdPath) == 0 && !strict:
			return nil // a name, not the gitpeer command
		case len(cmd.subcommands) > 0 && commandName.MatchString(a):
			return []string{fmt.Sprintf("gitpeer %s: no command %q (gitpeer %s has %s)",
				strings.Join(args, " "), a, strings.Join(cmdPath, " "), strings.Join(cmd.names(), ", "))}
		default:
			argSeen = true // the first argument: no subcommand follows
		}
	}
	if len(cmdPath) == 0 && !strict {
		return nil
	}
	var msgs []string
	for _, f := range flags {
		if !cmd.flags[f] {
			msgs = append(msgs, fmt.Sprintf("gitpeer %s: %s has no flag %s", strings.Join(args, " "),
				strings.TrimSpace("gitpeer "+strings.Join(cmdPath, " ")), f))
		}
	}
	return msgs
}

// flagName is the flag a word sets: --name of --name=value, -x of -xvalue.
func flagName(w string) string {
	if strings.HasPrefix(w, "--") {
		n, _, _ := strings.Cut(w, "=")
		return n
	}
	return w[:2]
}
