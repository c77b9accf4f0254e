package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/electd/electd/internal/config"
)

// docs/configuration.md is generated from the table, as config.example.yaml
// is; a key added, renamed or given a new default or help, or a change to
// configuration.md.tmpl, without `go generate ./internal/config` fails here.
func TestReferenceIsGenerated(t *testing.T) {
	want, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, want) {
		t.Errorf("docs/configuration.md differs from the table; run: go generate ./internal/config")
	}
	for _, k := range config.Keys() {
		if !bytes.Contains(committed, []byte("\n| `"+k.Name+"` | `"+k.Env+"` |")) {
			t.Errorf("docs/configuration.md has no row for %s", k.Name)
		}
	}
}

// Every section has an introduction in the template, and the reference
// ends with exactly one newline.
func TestReferenceShape(t *testing.T) {
	b, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(b, []byte("|\n")) {
		t.Errorf("the reference does not end with its last table row and one newline: %q", b[max(0, len(b)-40):])
	}
	for _, s := range sections(config.Keys()) {
		heading := "\n### `" + s.Name + "`\n"
		if s.Name == "" {
			heading = "\n### Top level\n"
		}
		if !strings.Contains(string(b), heading) {
			t.Errorf("no heading %q", strings.TrimSpace(heading))
		}
	}
}
