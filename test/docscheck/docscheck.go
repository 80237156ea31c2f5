// Package docscheck checks the project's Markdown documentation against the repository: every
// relative link resolves to a file and its #anchor to a heading (GitHub's slugs), every `make
// <target>` names a target of the Makefile, and every `gitpeer <command> --flag` a command and
// flag of the gitpeer binary. Markdown is parsed with goldmark (CommonMark and GitHub's tables, as
// GitHub renders them); the shell words of code are split by hand, as the commands docs show are
// simple (no quoting of the words the checks read).
package docscheck

import (
	"cmp"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// Problem is one thing a document names that does not exist.
type Problem struct {
	File string // relative to the checked root
	Line int
	Msg  string
}

// String is the problem as file:line: message.
func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// Checker checks Markdown files of the repository at Root.
type Checker struct {
	Root string
	// Targets are the make targets that exist (MakeTargets); nil skips the make check.
	Targets map[string]bool
	// CLI answers which commands and flags gitpeer has; nil skips the CLI check.
	CLI *CLI
	// Repository is the repository's web address (https://github.com/owner/name): links to its
	// files at any ref (.../blob/<ref>/<path>, .../tree/<ref>/<path>), as release notes need,
	// are checked as links to the checked-out files.
	Repository string

	docs map[string]*doc // parsed files by path relative to Root
}

// skipDirs are directories whose Markdown is not documentation: caches, build output and test
// fixtures (which are broken on purpose).
var skipDirs = map[string]bool{".git": true, ".cache": true, "bin": true, "dist": true, "testdata": true, "node_modules": true}

// Files lists the Markdown files under root, relative to it.
func Files(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && skipDirs[d.Name()] {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

// Check checks the given files (relative to Root) and returns what they name that does not exist.
func (c *Checker) Check(files []string) ([]Problem, error) {
	var problems []Problem
	for _, f := range files {
		d, err := c.doc(f)
		if err != nil {
			return nil, err
		}
		for _, l := range d.links {
			if msg := c.checkLink(f, l.dest); msg != "" {
				problems = append(problems, Problem{f, l.line, msg})
			}
		}
		for _, code := range d.code {
			problems = append(problems, c.checkCode(f, code)...)
		}
	}
	slices.SortStableFunc(problems, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.File, b.File), a.Line-b.Line)
	})
	return problems, nil
}

// doc is what the checks read of one Markdown file.
type doc struct {
	anchors map[string]bool
	links   []located
	code    []located // code spans and code blocks
}

type located struct {
	dest string // a link's destination, or the code's text
	line int
}

var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

// htmlAnchor finds the anchors raw HTML defines, as GitHub keeps them (prefixed user-content-,
// which its page script resolves from the bare name).
var htmlAnchor = regexp.MustCompile(`<a\s[^>]*\b(?:id|name)="([^"]+)"`)

func (c *Checker) doc(rel string) (*doc, error) {
	if d, ok := c.docs[rel]; ok {
		return d, nil
	}
	source, err := os.ReadFile(filepath.Join(c.Root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	d := &doc{anchors: map[string]bool{}}
	lines := lineStarts(source)
	slugs := map[string]int{}
	err = ast.Walk(md.Parser().Parse(text.NewReader(source)), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			d.anchors[uniqueSlug(slugs, plainText(n, source))] = true
		case *ast.Link:
			d.links = append(d.links, located{string(n.Destination), lines.of(offset(n))})
		case *ast.Image:
			d.links = append(d.links, located{string(n.Destination), lines.of(offset(n))})
		case *ast.CodeSpan:
			d.code = append(d.code, located{plainText(n, source), lines.of(offset(n))})
			return ast.WalkSkipChildren, nil
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			segs := n.Lines()
			if segs.Len() > 0 {
				d.code = append(d.code, located{string(segs.Value(source)), lines.of(segs.At(0).Start)})
			}
		case *ast.HTMLBlock:
			segs := n.Lines()
			for _, m := range htmlAnchor.FindAllSubmatch(segs.Value(source), -1) {
				d.anchors[string(m[1])] = true
			}
		case *ast.RawHTML:
			for _, m := range htmlAnchor.FindAllSubmatch(n.Segments.Value(source), -1) {
				d.anchors[string(m[1])] = true
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	if c.docs == nil {
		c.docs = map[string]*doc{}
	}
	c.docs[rel] = d
	return d, nil
}

// checkLink returns what is wrong with a link of the file from, or "".
func (c *Checker) checkLink(from, dest string) string {
	if dest == "" {
		return "empty link"
	}
	u, err := url.Parse(dest)
	if err != nil {
		return fmt.Sprintf("link %q: %v", dest, err)
	}
	if u.Scheme != "" || u.Host != "" {
		if u.Path = c.repositoryPath(u); u.Path == "" {
			return "" // elsewhere: not checked offline
		}
	}
	target := from
	if u.Path != "" {
		if strings.HasPrefix(u.Path, "/") { // GitHub resolves these from the repository's root
			target = path.Clean(strings.TrimPrefix(u.Path, "/"))
		} else {
			target = path.Join(path.Dir(from), u.Path)
		}
		if target == ".." || strings.HasPrefix(target, "../") {
			return fmt.Sprintf("link %q leaves the repository", dest)
		}
		if _, err := os.Stat(filepath.Join(c.Root, filepath.FromSlash(target))); err != nil {
			return fmt.Sprintf("link %q: %s does not exist", dest, target)
		}
	}
	if u.Fragment == "" || !strings.HasSuffix(target, ".md") {
		return "" // anchors of other files (source lines) are not headings
	}
	d, err := c.doc(target)
	if err != nil {
		return fmt.Sprintf("link %q: %v", dest, err)
	}
	if !d.anchors[u.Fragment] {
		return fmt.Sprintf("link %q: %s has no heading with anchor #%s", dest, target, u.Fragment)
	}
	return ""
}

// repositoryPath is the path from the repository's root ("/docs/x.md") of an absolute link to a
// file of Repository at some ref, or "".
func (c *Checker) repositoryPath(u *url.URL) string {
	if c.Repository == "" {
		return ""
	}
	rest, ok := strings.CutPrefix(u.Scheme+"://"+u.Host+u.Path, strings.TrimSuffix(c.Repository, "/")+"/")
	if !ok {
		return ""
	}
	kind, rest, _ := strings.Cut(rest, "/")
	if kind != "blob" && kind != "tree" {
		return ""
	}
	_, file, _ := strings.Cut(rest, "/") // after the ref (a tag or branch without '/')
	return "/" + file
}

// plainText is the text of a node as GitHub renders it, without markup.
func plainText(n ast.Node, source []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch n := n.(type) {
			case *ast.Text:
				b.Write(n.Value(source))
				if n.SoftLineBreak() {
					b.WriteByte(' ')
				}
			case *ast.String:
				b.Write(n.Value)
			case *ast.AutoLink:
				b.Write(n.Label(source))
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// uniqueSlug is GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped,
// each space a '-'; the second heading of the same slug gets "-1", the third "-2".
func uniqueSlug(seen map[string]int, heading string) string {
	s := strings.Map(func(r rune) rune {
		switch {
		case r == ' ':
			return '-'
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			return unicode.ToLower(r)
		}
		return -1
	}, strings.TrimSpace(heading))
	n := seen[s]
	seen[s]++
	if n > 0 {
		return fmt.Sprintf("%s-%d", s, n)
	}
	return s
}

// offset is the position in the source of an inline node: its first text's.
func offset(n ast.Node) int {
	for c := n.FirstChild(); c != nil; c = c.FirstChild() {
		if t, ok := c.(*ast.Text); ok {
			return t.Segment.Start
		}
	}
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			return p.Lines().At(0).Start
		}
	}
	return 0
}

type lineIndex []int

func lineStarts(source []byte) lineIndex {
	starts := lineIndex{0}
	for i, b := range source {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// of is the 1-based line of a byte offset.
func (l lineIndex) of(off int) int {
	i, found := slices.BinarySearch(l, off)
	if found {
		return i + 1
	}
	return i
}
