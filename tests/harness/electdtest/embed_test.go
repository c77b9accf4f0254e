package electdtest

import (
	"reflect"
	"testing"
)

// A file a package embeds is an input of the build: changing it changes the key, so the
// tests never run a binary with an old copy of it (the status page's script, say).
func TestSourceKeyEmbeds(t *testing.T) {
	root, write := sourceTree(t)
	write("internal/ui/ui.go", "package ui\n\nimport \"embed\"\n\n//go:embed page.html \"static/*.js\" all:assets\nvar files embed.FS\n")
	write("internal/ui/ui_test.go", "package ui\n\n//go:embed fixture.txt\nvar fixture string\n")
	for _, rel := range []string{"internal/ui/page.html", "internal/ui/static/app.js", "internal/ui/assets/a/b.css",
		"internal/ui/fixture.txt", "internal/ui/other.html", "internal/ui/static/app.css"} {
		write(rel, rel)
	}
	got, err := buildInputs(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cmd/x/main.go", "go.mod", "go.sum", "internal/ui/assets/a/b.css",
		"internal/ui/page.html", "internal/ui/static/app.js", "internal/ui/ui.go"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("buildInputs =\n%q\nwant\n%q", got, want)
	}

	// Only what the binary embeds moves the key.
	checkKey(t, root, write, false, "internal/ui/other.html", "internal/ui/fixture.txt", "internal/ui/static/app.css")
	checkKey(t, root, write, true, "internal/ui/page.html", "internal/ui/static/app.js", "internal/ui/assets/a/b.css")
}
