package electdtest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/buildcache"
)

// Version and Commit are stamped into the binary the tests run (main.version and
// main.commit), so that `electd --version` says it is a test build.
const (
	Version = "v0.0.0-electdtest"
	Commit  = "electdtest"
)

// raceEnabled is set by race.go when the tests are built with -race: electd is then built
// with it too.
var raceEnabled bool

// builds are Build's (with -race when the caller has it) and Plain's.
type builds struct {
	once   sync.Once
	path   string
	err    error
	how    string // what the build did, for the first test's log
	logged sync.Once
}

var built, plain builds

// Binary returns the electd binary for this run of the tests, building it if needed. In
// -short mode it skips t: -short runs the unit tests alone. A failed build fails t.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("electdtest: runs the electd binary (and what it talks to); skipped in -short mode")
	}
	bin, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	built.logged.Do(func() { t.Logf("electdtest: %s: %s", bin, built.how) })
	return bin
}

// Build returns the path of electd built from the enclosing module's sources (the
// module holding the working directory), with -race when the caller is built with it.
//
// The binary is kept in the user's cache directory (tests/harness/buildcache, kind "bin"),
// under a key that hashes every input of the build: the module's non-test Go and
// assembly files and their paths, go.mod and go.sum, the Go version, GOOS and GOARCH,
// the GOFLAGS, CGO_ENABLED and GOEXPERIMENT settings, and the build flags (-race, the
// stamp). Any change to one of them is a new key, hence a new build; the test files are
// not inputs, so editing a test does not rebuild. The first test binary of a run to ask
// builds it under a file lock while the others (`go test ./...` runs several packages at
// once) wait for it, so a run builds once; the next run with the same sources builds
// nothing.
func Build() (string, error) {
	built.once.Do(func() { built.path, built.err = build(&built, raceEnabled) })
	return built.path, built.err
}

// Plain is Binary built without the race detector, whatever the caller's
// build: the memory and file-descriptor figures of a -race build say
// nothing about the real one.
func Plain(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("electdtest: runs the electd binary (and what it talks to); skipped in -short mode")
	}
	plain.once.Do(func() { plain.path, plain.err = build(&plain, false) })
	if plain.err != nil {
		t.Fatal(plain.err)
	}
	plain.logged.Do(func() { t.Logf("electdtest: %s (no -race): %s", plain.path, plain.how) })
	return plain.path
}

func build(b *builds, race bool) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	args := []string{"build", "-ldflags", "-X main.version=" + Version + " -X main.commit=" + Commit}
	if race {
		args = append(args, "-race")
	}
	key, err := sourceKey(root, args)
	if err != nil {
		return "", err
	}
	start := time.Now()
	var took time.Duration
	dir, err := buildcache.Dir("bin", key, func(dir string) error {
		defer func() { took = time.Since(start) }()
		cmd := exec.Command("go", append(args, "-o", filepath.Join(dir, "electd"), "./cmd/electd")...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("electdtest: go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	switch waited := time.Since(start); {
	case took > 0:
		b.how = fmt.Sprintf("built by this test binary in %v", took.Round(time.Millisecond))
	case waited > time.Second:
		b.how = fmt.Sprintf("built by another test binary; waited %v for it", waited.Round(time.Millisecond))
	default:
		b.how = "built before, in the cache"
	}
	return filepath.Join(dir, "electd"), nil
}

// ModuleRoot walks up from the working directory to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("electdtest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// sourceKey hashes the inputs of the build (see Build).
func sourceKey(root string, args []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "electdtest build 1\n%s %s/%s\n%q\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, args)
	for _, env := range []string{"GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT", "GOAMD64", "GOARM64"} {
		fmt.Fprintf(h, "%s=%s\n", env, os.Getenv(env))
	}
	files, err := buildInputs(root)
	if err != nil {
		return "", err
	}
	for _, rel := range files {
		f, err := os.Open(filepath.Join(root, rel))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00", rel)
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// buildInputs lists, relative to root and sorted, go.mod, go.sum and every Go or assembly
// file the go tool could compile into a package of the module: not tests, not under
// testdata or a directory the go tool ignores (".x", "_x"), not in a nested module; and
// the files those Go files embed (embed.go).
func buildInputs(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case rel == "go.mod", rel == "go.sum":
		case strings.HasSuffix(name, "_test.go"):
			return nil
		case strings.HasSuffix(name, ".go"), strings.HasSuffix(name, ".s"):
		default:
			return nil
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		return nil, err
	}
	embedded, err := embedInputs(root, files)
	files = append(files, embedded...)
	slices.Sort(files)
	return slices.Compact(files), err
}
