// Package doctest runs the shell blocks of the Markdown documentation and
// compares what they print with what the documentation shows: a doc that
// drifts from the code fails the tests (tests/docs runs the local blocks,
// tests/demotest the README's demo transcript). docs/development.md,
// "Commands in the docs", says how a block is marked and what is ignored.
package doctest

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Markings a shell block carries after its language (```sh run):
const (
	// MarkRun: tests/docs runs it locally, after the README's setup.
	MarkRun = "run"
	// MarkStop: a run block of the README that ends the setup (it runs
	// last).
	MarkStop = "stop"
	// MarkNode: run on a Kubernetes node (make e2e), not locally.
	MarkNode = "node"
	// MarkManual: shown, not run by any test (it needs what the tests
	// lack, e.g. a Docker engine or a registry); the prose says why.
	MarkManual = "manual"
	// MarkOutput: a text block (```text output) right after a run or node
	// block without "$ " prompts shows what that block's commands print,
	// so that the commands can be pasted whole.
	MarkOutput = "output"
)

// shellLangs are the info strings of shell blocks.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// Block is one fenced code block of a Markdown file.
type Block struct {
	File string
	// Line is the 1-based line of the opening fence; the content starts on
	// the next line and ends on End-1 (End is the closing fence's line).
	Line, End int
	Lang      string   // the info string's first word
	Tags      []string // the info string's other words
	// Indent is the fence's indentation, removed from every content line
	// (a block inside a list item).
	Indent string
	Lines  []string
	// Out is the output block that follows a run block without prompts,
	// or nil.
	Out *Block
}

// Has reports whether the block carries the marking tag.
func (b Block) Has(tag string) bool {
	for _, t := range b.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// Shell reports whether the block holds shell commands: its language is a
// shell's, or it has none and a line starts with "$ ".
func (b Block) Shell() bool {
	if shellLangs[b.Lang] {
		return true
	}
	if b.Lang != "" {
		return false
	}
	for _, l := range b.Lines {
		if strings.HasPrefix(l, "$ ") {
			return true
		}
	}
	return false
}

// Where is "file:line" of the block's opening fence.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// ReadBlocks returns the fenced code blocks of a Markdown file, in order.
func ReadBlocks(path string) ([]Block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseBlocks(path, string(data))
}

// ParseBlocks returns the fenced code blocks of Markdown text (CommonMark's
// fences: three or more backticks or tildes, closed by at least as many of
// the same, indented as the opening one at most three spaces more). An
// unclosed fence is an error: everything after it would be code.
func ParseBlocks(file, text string) ([]Block, error) {
	var blocks []Block
	var cur *Block
	var fence string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		indent := line[:len(line)-len(trimmed)]
		if cur == nil {
			f, info := openFence(trimmed)
			if f == "" {
				continue
			}
			fields := strings.Fields(info)
			cur = &Block{File: file, Line: n, Indent: indent}
			if len(fields) > 0 {
				cur.Lang, cur.Tags = fields[0], fields[1:]
			}
			fence = f
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
			cur.End = n
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		cur.Lines = append(cur.Lines, strings.TrimPrefix(line, cur.Indent))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: the fence opened here is never closed", cur.Where())
	}
	return blocks, pairOutputs(blocks)
}

// pairOutputs joins each output block to the block before it: a run or
// node block without prompts (tests/e2e reads the node's pairs itself).
// An output block anywhere else would be text that no test checks.
func pairOutputs(blocks []Block) error {
	for i := range blocks {
		if !blocks[i].Has(MarkOutput) {
			continue
		}
		var prev *Block
		if i > 0 {
			prev = &blocks[i-1]
		}
		if prev == nil || !prev.Shell() || !(prev.Has(MarkRun) || prev.Has(MarkNode)) || prev.transcript() {
			return fmt.Errorf("%s: an output block must follow a ```sh run (or node) block without \"$ \" prompts", blocks[i].Where())
		}
		prev.Out = &blocks[i]
	}
	return nil
}

// openFence returns the fence a line opens and its info string, or "".
func openFence(s string) (fence, info string) {
	for _, c := range []string{"`", "~"} {
		n := len(s) - len(strings.TrimLeft(s, c))
		if n >= 3 {
			info = strings.TrimSpace(s[n:])
			if c == "`" && strings.Contains(info, "`") {
				return "", ""
			}
			return s[:n], info
		}
	}
	return "", ""
}
