package doctest

import (
	"regexp"
	"strings"
)

// Step is one command of a block and what the block shows it printing.
type Step struct {
	Block *Block
	// Line is the 1-based line of the command in the block's file.
	Line int
	// Command is the shell text: one line, or several joined by a trailing
	// backslash or a here-document.
	Command string
	// Want is what the block shows the command printing, one entry a line;
	// a line "..." stands for any number of lines.
	Want []string
	// Script says the block was a script (no "$ " prompt): the whole block
	// is Command, and it prints what its output block shows (Block.Out),
	// or nothing without one.
	Script bool
	// first and last are Want's lines in the block that shows them
	// (indexes into shown().Lines): where Update writes what the command
	// printed.
	first, last int
}

// shown is the block that shows what the step prints: its output block,
// or its own.
func (s Step) shown() *Block {
	if s.Block.Out != nil {
		return s.Block.Out
	}
	return s.Block
}

// heredoc finds a here-document's delimiter: <<WORD, <<'WORD', <<-"WORD".
var heredoc = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// Steps splits a shell block into its commands. A block whose lines start
// with "$ " is a transcript: each "$ " line is a command (continued by a
// trailing backslash, or by a here-document's lines up to its delimiter),
// and the lines up to the next command are its output. A block without
// a "$ " line is a script: one command, the whole block, printing what
// its output block shows, or nothing without one.
func Steps(b *Block) []Step {
	if !b.transcript() {
		s := Step{Block: b, Line: b.Line + 1, Command: strings.Join(b.Lines, "\n"), Script: true, first: len(b.Lines), last: len(b.Lines)}
		if b.Out != nil {
			s.Want, s.first, s.last = b.Out.Lines, 0, len(b.Out.Lines)
		}
		return []Step{s}
	}
	var steps []Step
	for i := 0; i < len(b.Lines); {
		line := b.Lines[i]
		if !strings.HasPrefix(line, "$ ") {
			i++ // text before the first command: none in a transcript
			continue
		}
		s := Step{Block: b, Line: b.Line + 1 + i}
		cmd := []string{strings.TrimPrefix(line, "$ ")}
		i++
		var delims []string
		for _, m := range heredoc.FindAllStringSubmatch(cmd[0], -1) {
			delims = append(delims, m[1])
		}
		for i < len(b.Lines) && (strings.HasSuffix(cmd[len(cmd)-1], "\\") || len(delims) > 0) {
			next := b.Lines[i]
			cmd = append(cmd, next)
			if len(delims) > 0 && strings.TrimSpace(next) == delims[0] {
				delims = delims[1:]
			} else if len(delims) == 0 {
				for _, m := range heredoc.FindAllStringSubmatch(next, -1) {
					delims = append(delims, m[1])
				}
			}
			i++
		}
		s.Command = strings.Join(cmd, "\n")
		s.first = i
		for i < len(b.Lines) && !strings.HasPrefix(b.Lines[i], "$ ") {
			s.Want = append(s.Want, b.Lines[i])
			i++
		}
		s.last = i
		steps = append(steps, s)
	}
	return steps
}

func (b *Block) transcript() bool {
	for _, l := range b.Lines {
		if strings.HasPrefix(l, "$ ") {
			return true
		}
	}
	return false
}
