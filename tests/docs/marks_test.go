package docs

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/electd/electd/tests/harness/doctest"
)

// Every shell block of README.md and docs/*.md says who runs it: "run"
// (tests/docs, locally; "run stop" ends the README's setup), "node" (the
// Kubernetes node of make e2e) or "manual" (no test: it needs what the
// tests lack, and the prose says what). A block without a marking would be
// a command nobody checks.
func TestShellBlocksAreMarked(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	marks := []string{doctest.MarkRun, doctest.MarkNode, doctest.MarkManual}
	for _, f := range append([]string{filepath.Join(repo, "README.md")}, files...) {
		blocks, err := doctest.ReadBlocks(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if !b.Shell() {
				continue
			}
			n := 0
			for _, tag := range b.Tags {
				if slices.Contains(marks, tag) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: a shell block marked %q; want exactly one of %v after the language (```sh run)", b.Where(), b.Tags, marks)
			}
			if b.Has(doctest.MarkStop) && (!b.Has(doctest.MarkRun) || filepath.Base(f) != "README.md") {
				t.Errorf("%s: \"stop\" ends the README's setup: only a README block marked run may carry it", b.Where())
			}
		}
	}
}
