package doctest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A run block without prompts followed by an output block is one step
// whose output is that block; -update writes into the output block.
func TestOutputBlock(t *testing.T) {
	const doc = "Text.\n\n```sh run\necho one\necho two\n```\n\n```text output\none\nold\n```\n\nMore.\n"
	file := filepath.Join(t.TempDir(), "page.md")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, err := ReadBlocks(file)
	if err != nil {
		t.Fatal(err)
	}
	steps := Steps(&blocks[0])
	if len(steps) != 1 {
		t.Fatalf("%d steps, want 1", len(steps))
	}
	s := steps[0]
	if got, want := s.Command, "echo one\necho two"; got != want {
		t.Errorf("command = %q, want %q", got, want)
	}
	if got, want := s.Want, []string{"one", "old"}; !slices.Equal(got, want) {
		t.Errorf("want = %q, want %q", got, want)
	}
	got := []string{"one", "two"}
	ok, diff := Compare(s.Want, got)
	if ok {
		t.Fatal("a drifted output compared equal")
	}
	if err := Update([]Result{{Step: s, Got: got, Diff: diff}}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(doc, "one\nold\n", "one\ntwo\n", 1)
	if string(b) != want {
		t.Errorf("updated page:\n%s\nwant:\n%s", b, want)
	}
}

// An output block that follows no prompt-less run or node block would be
// text no test checks: reading the page fails.
func TestOutputBlockMisplaced(t *testing.T) {
	for name, doc := range map[string]string{
		"first":              "```text output\nx\n```\n",
		"after text":         "```text\na\n```\n\n```text output\nx\n```\n",
		"after manual":       "```sh manual\nmake\n```\n\n```text output\nx\n```\n",
		"after a transcript": "```sh run\n$ echo x\nx\n```\n\n```text output\nx\n```\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseBlocks("page.md", doc); err == nil || !strings.Contains(err.Error(), "output block") {
				t.Errorf("err = %v, want one about the output block", err)
			}
		})
	}
}
