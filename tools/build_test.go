package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// writeModule writes a one-file module that prints msg.
func writeModule(t *testing.T, root, msg string) {
	t.Helper()
	dir := filepath.Join(root, "tools", "hello")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.22\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"" + msg + "\") }\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBuildOncePerModuleVersion(t *testing.T) {
	t.Setenv("ELECTD_TOOLS_CACHE", t.TempDir())
	root := t.TempDir()
	writeModule(t, root, "one")
	tool := Tool{Dir: "tools/hello", Package: ".", Name: "hello"}

	// Concurrent callers (parallel test packages) get one build.
	var mu sync.Mutex
	builds := 0
	logf := func(string, ...any) { mu.Lock(); builds++; mu.Unlock() }
	paths := make([]string, 4)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() {
			p, err := Build(root, tool, logf)
			if err != nil {
				t.Error(err)
			}
			paths[i] = p
		})
	}
	wg.Wait()
	if builds != 1 {
		t.Errorf("%d builds for 4 concurrent callers, want 1", builds)
	}
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Errorf("paths differ: %q and %q", p, paths[0])
		}
	}
	if out := run(t, paths[0]); out != "one" {
		t.Errorf("the tool printed %q, want one", out)
	}

	// A change to the module's files is a new build at a new path.
	writeModule(t, root, "two")
	p, err := Build(root, tool, logf)
	if err != nil {
		t.Fatal(err)
	}
	if p == paths[0] || builds != 2 {
		t.Errorf("after a change: path %q (was %q), %d builds; want a new path and a second build", p, paths[0], builds)
	}
	if out := run(t, p); out != "two" {
		t.Errorf("the rebuilt tool printed %q, want two", out)
	}
}

func TestBuildFailureSaysWhy(t *testing.T) {
	t.Setenv("ELECTD_TOOLS_CACHE", t.TempDir())
	root := t.TempDir()
	writeModule(t, root, `broken"`)
	_, err := Build(root, Tool{Dir: "tools/hello", Package: ".", Name: "hello"}, nil)
	if err == nil || !strings.Contains(err.Error(), "go build") {
		t.Fatalf("Build of a module that does not compile: %v, want a go build error", err)
	}
}

func run(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
