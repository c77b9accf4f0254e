package e2e

import (
	"bufio"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The docs' Kubernetes commands run on the node (docs_test.go): a fenced
// block whose info string is "sh node" is run in document order, per file,
// and a "text output" block right after it (no other block between) shows
// what it prints. A block whose lines start with "$ " is a transcript
// instead: each such line is a command (continued by a trailing
// backslash), and the lines up to the next are what it prints. A third
// word names the block's session ("sh node helm"): each session of a file
// runs in a shell and a namespace of its own, in the order of its first
// block.

// DocStep is one command of the docs meant for the node.
type DocStep struct {
	File    string // as given to NodeSteps
	Line    int    // of the command's first line
	Session string // the block's session, "" for the file's first
	Command string
	// Want is what the docs show it printing; Compare says whether they
	// show anything (a script block without an output block: not compared).
	Want    []string
	Compare bool
}

// Where is file:line.
func (s DocStep) Where() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// fence is one fenced block: its info string's words and its lines.
type fence struct {
	line  int // of the opening fence
	info  []string
	lines []string
}

// fences returns the fenced blocks of Markdown text, in order (backtick or
// tilde fences of three or more, indented up to a list item's; an
// unclosed one is an error).
func fences(text string) ([]fence, error) {
	var out []fence
	var cur *fence
	var marker, indent string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if cur == nil {
			m := fenceRE.FindStringSubmatch(trimmed)
			if m == nil {
				continue
			}
			cur = &fence{line: n, info: strings.Fields(m[2])}
			marker, indent = m[1], line[:len(line)-len(trimmed)]
			continue
		}
		if strings.HasPrefix(trimmed, marker) && strings.Trim(trimmed, marker[:1]) == "" {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.lines = append(cur.lines, strings.TrimPrefix(line, indent))
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: a fence never closed", cur.line)
	}
	return out, sc.Err()
}

var fenceRE = regexp.MustCompile("^(`{3,}|~{3,})\\s*([^`]*)$")

func (f fence) is(lang, tag string) bool {
	return len(f.info) >= 2 && f.info[0] == lang && slices.Contains(f.info[1:], tag)
}

// NodeSteps returns the commands of a Markdown file's "sh node" blocks.
func NodeSteps(file, text string) ([]DocStep, error) {
	fs, err := fences(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var steps []DocStep
	for i, f := range fs {
		if !f.is("sh", "node") {
			continue
		}
		session := ""
		if len(f.info) > 2 {
			session = slices.DeleteFunc(slices.Clone(f.info[1:]), func(w string) bool { return w == "node" })[0]
		}
		if !slices.ContainsFunc(f.lines, func(l string) bool { return strings.HasPrefix(l, "$ ") }) {
			s := DocStep{File: file, Line: f.line + 1, Session: session, Command: strings.Join(f.lines, "\n")}
			if i+1 < len(fs) && fs[i+1].is("text", "output") {
				s.Want, s.Compare = fs[i+1].lines, true
			}
			steps = append(steps, s)
			continue
		}
		for _, s := range transcript(file, f) {
			s.Session = session
			steps = append(steps, s)
		}
	}
	return steps, nil
}

// Sessions groups steps by session, in the order of each session's first
// step, each in document order.
func Sessions(steps []DocStep) [][]DocStep {
	var out [][]DocStep
	at := map[string]int{}
	for _, s := range steps {
		i, ok := at[s.Session]
		if !ok {
			i = len(out)
			at[s.Session] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], s)
	}
	return out
}

// transcript splits a block of "$ " commands and what each prints.
func transcript(file string, f fence) []DocStep {
	var steps []DocStep
	for i := 0; i < len(f.lines); {
		if !strings.HasPrefix(f.lines[i], "$ ") {
			i++ // nothing before the first command
			continue
		}
		s := DocStep{File: file, Line: f.line + 1 + i, Compare: true}
		cmd := []string{strings.TrimPrefix(f.lines[i], "$ ")}
		for i++; strings.HasSuffix(cmd[len(cmd)-1], "\\") && i < len(f.lines); i++ {
			cmd = append(cmd, f.lines[i])
		}
		s.Command = strings.Join(cmd, "\n")
		for ; i < len(f.lines) && !strings.HasPrefix(f.lines[i], "$ "); i++ {
			s.Want = append(s.Want, f.lines[i])
		}
		steps = append(steps, s)
	}
	return steps
}
