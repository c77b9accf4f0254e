package doctest

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Update writes into each transcript's block what its commands printed,
// for the results whose output differs from the block's (a block that
// matches keeps its text, so that an update changes only what drifted):
// the docs' outputs come from running their commands, never from an
// editor. A script block that printed something cannot show it: that is
// an error. Results of several files may be mixed; each file is written
// once.
func Update(results []Result) error {
	byFile := map[string][]Result{}
	for _, r := range results {
		if r.Err == nil && r.Diff != "" {
			if r.Step.Script {
				return fmt.Errorf("%s:%d: a script block printed something; show it in a transcript (\"$ \" lines) instead:\n%s",
					r.Step.Block.File, r.Step.Line, strings.Join(r.Got, "\n"))
			}
			byFile[r.Step.Block.File] = append(byFile[r.Step.Block.File], r)
		}
	}
	for file, rs := range byFile {
		if err := updateFile(file, rs); err != nil {
			return err
		}
	}
	return nil
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
			got[i] = r.Step.Block.Indent + l
		}
		lines = slices.Concat(lines[:from], got, lines[to:])
	}
	return os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644)
}

// lineOf is the 0-based index in the file of a line of r's block.
func lineOf(r Result, i int) int { return r.Step.Block.Line + i }
