package doctest

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Update writes into each transcript's block what its commands printed,
// and each script's output block, for the results whose output differs
// from the block's (a block that matches keeps its text, so that an update
// changes only what drifted): the docs' outputs come from running their
// commands, never from an editor. A script block without an output block
// that printed something cannot show it: that is an error. Results of several files may be mixed; each file is written
// once. sources maps a generated file to the file it is generated from
// (docs/configuration.md: its template), which gets the same change: the
// block's text is in both.
func Update(results []Result, sources map[string]string) error {
	byFile := map[string][]Result{}
	for _, r := range results {
		if r.Err == nil && r.Diff != "" {
			if r.Step.Script && r.Step.Block.Out == nil {
				return fmt.Errorf("%s:%d: a script block printed something; show it in an output block (```text output) after it:\n%s",
					r.Step.Block.File, r.Step.Line, strings.Join(r.Got, "\n"))
			}
			byFile[r.Step.Block.File] = append(byFile[r.Step.Block.File], r)
		}
	}
	for file, rs := range byFile {
		old, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if err := updateFile(file, rs); err != nil {
			return err
		}
		if src, ok := sources[file]; ok {
			if err := mirror(src, rs, string(old), file); err != nil {
				return err
			}
		}
	}
	return nil
}

// mirror makes in src the change updateFile made to the blocks of rs in
// file, whose text was old: each block's text, found in src, is replaced
// with the block's text now.
func mirror(src string, rs []Result, old, file string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	now, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	text := string(data)
	blocks := map[*Block]bool{}
	for _, r := range rs {
		blocks[r.Step.shown()] = true
	}
	before, after := strings.Split(old, "\n"), strings.Split(string(now), "\n")
	// The blocks in the file's order: each block after an updated one moved
	// by what the ones before it grew.
	ordered := slices.SortedFunc(maps.Keys(blocks), func(a, b *Block) int { return a.Line - b.Line })
	moved := 0
	for _, b := range ordered {
		was := strings.Join(before[b.Line:b.End-1], "\n")
		grew := 0
		for _, r := range rs {
			if r.Step.shown() == b {
				grew += len(r.Got) - (r.Step.last - r.Step.first)
			}
		}
		is := strings.Join(after[b.Line+moved:b.End-1+moved+grew], "\n")
		moved += grew
		if !strings.Contains(text, was) {
			return fmt.Errorf("%s: the block of %s is not in %s as it is in the generated file; update it by hand", src, b.Where(), src)
		}
		text = strings.Replace(text, was, is, 1)
	}
	return os.WriteFile(src, []byte(text), 0o644)
}

func updateFile(file string, rs []Result) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	lines := strings.Split(string(data), "\n")
	// From the bottom up, so that each replacement's line numbers hold.
	slices.SortFunc(rs, func(a, b Result) int { return lineOf(b, b.Step.first) - lineOf(a, a.Step.first) })
	for _, r := range rs {
		from, to := lineOf(r, r.Step.first), lineOf(r, r.Step.last)
		got := make([]string, len(r.Got))
		for i, l := range r.Got {
			got[i] = r.Step.shown().Indent + l
		}
		lines = slices.Concat(lines[:from], got, lines[to:])
	}
	return os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644)
}

// lineOf is the 0-based index in the file of a line of the block that
// shows r's output.
func lineOf(r Result, i int) int { return r.Step.shown().Line + i }
