package docs

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/doctest"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/zktest"
)

var update = flag.Bool("update", false, "write into the docs what their commands printed (TestDocsRunLocally) or what the kept reports say (make quote) where it differs")

const (
	repo = "../.."
	// stepTimeout bounds one command: the slowest waits for ZooKeeper to
	// start, or for a leader.
	stepTimeout = 90 * time.Second
	// tmpDir is where the docs' commands keep their files; each session
	// gets its own instead.
	tmpDir = "/tmp/electd"
)

// tools are what the docs' commands run besides electd: a missing one
// fails the test here, with the package that brings it, rather than as a
// difference in some command's output.
var tools = map[string]string{"bash": "bash", "curl": "curl", "openssl": "openssl", "python3": "python3", "java": "a JDK (zookeeper)", "promtool": "prometheus"}

// Every "```sh run" block of README.md and docs/*.md runs in order in one
// shell, as a user would type it, and prints what the block shows
// (docs/development.md, "Commands in the docs"). Each page is a session
// of its own: the README's setup (its run blocks: ZooKeeper, two sidecars),
// then the page's blocks, then the README's stop block; the README alone
// is one too. -update writes what the commands printed into the blocks
// that differ.
func TestDocsRunLocally(t *testing.T) {
	bin := electdtest.Binary(t)
	zktest.Require(t)
	for tool, pkg := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not in PATH: the docs' commands need it (scripts/install-deps.sh installs %s)", tool, pkg)
		}
	}
	readme := runBlocks(t, filepath.Join(repo, "README.md"))
	var setup, stop []*doctest.Block
	for _, b := range readme {
		if b.Has(doctest.MarkStop) {
			stop = append(stop, b)
		} else {
			setup = append(setup, b)
		}
	}
	if len(setup) == 0 || len(stop) == 0 {
		t.Fatalf("README.md has %d run blocks and %d stop blocks; want the local setup and how to stop it", len(setup), len(stop))
	}
	pages, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The sessions share nothing (each its ports, its directory, its
	// ZooKeeper): they run side by side.
	t.Run("README.md", func(t *testing.T) {
		t.Parallel()
		session(t, bin, slices.Concat(setup, stop), "README.md")
	})
	for _, page := range pages {
		blocks := runBlocks(t, page)
		if len(blocks) == 0 {
			continue
		}
		name := "docs/" + filepath.Base(page)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			session(t, bin, slices.Concat(setup, blocks, stop), name)
		})
	}
}

// runBlocks are a file's "run" blocks.
func runBlocks(t *testing.T, path string) []*doctest.Block {
	t.Helper()
	blocks, err := doctest.ReadBlocks(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*doctest.Block
	for i := range blocks {
		if blocks[i].Has(doctest.MarkRun) {
			out = append(out, &blocks[i])
		}
	}
	return out
}

// session runs blocks in one shell, in a directory of its own that looks
// like the repository (bin/electd the binary under test), and fails t on
// every step that prints what its block does not show. Only page's own
// blocks are updated with -update.
func session(t *testing.T, bin string, blocks []*doctest.Block, page string) {
	var steps []doctest.Step
	for _, b := range blocks {
		steps = append(steps, doctest.Steps(b)...)
	}
	dir := checkout(t, bin)
	rw, err := doctest.NewRewrite(steps, map[string]string{tmpDir: filepath.Join(dir, "tmp-electd")})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := doctest.StartShell(dir, doctest.Env())
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close(10 * time.Second)
	var results []doctest.Result
	for _, step := range steps {
		res := doctest.Run(sh, rw, step, stepTimeout)
		results = append(results, res)
		if !res.OK() {
			t.Errorf("%s", res.Report())
		}
		if res.Err != nil {
			t.Logf("the session's whole output:\n%s", sh.Output())
			break // a shell that hangs or died runs nothing more
		}
	}
	if *update {
		var own []doctest.Result
		for _, r := range results {
			if filepath.ToSlash(strings.TrimPrefix(r.Step.Block.File, repo+"/")) == page {
				own = append(own, r)
			}
		}
		generated := map[string]string{filepath.Join(repo, "docs", "configuration.md"): filepath.Join(repo, "internal", "config", "gen", "configuration.md.tmpl")}
		if err := doctest.Update(own, generated); err != nil {
			t.Fatal(err)
		}
	}
}

// checkout is a directory that the docs' commands, which run from the
// repository's root, can run in: bin/electd is the binary under test, and
// everything else is a link to the repository's own (scripts/app.py,
// config.example.yaml, deploy/...).
func checkout(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "bin" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin", "electd")); err != nil {
		t.Fatal(err)
	}
	return dir
}
