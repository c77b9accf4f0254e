// Package tools builds the programs whose modules live under tools/ (each a
// Go module of its own, so that their large dependency trees, Helm's and the
// Prometheus server's, never enter electd's go.mod) for the tests that run
// them.
//
// A program is built once per machine and per version of its module: into
// $ELECTD_TOOLS_CACHE, else <user cache dir>/electd-tools, under a name that
// hashes the module's files and the Go version, with a file lock so that
// test packages running in parallel (or two checkouts) build it once. The
// first build downloads the module's dependencies from the Go module proxy.
package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Tool is one program of a module under tools/.
type Tool struct {
	// Dir is the module's directory, e.g. "tools/helm", relative to the
	// repository root.
	Dir string
	// Package is what `go build` builds inside that module: "." or an
	// import path the module requires (a `tool` line of its go.mod).
	Package string
	// Name is the binary's name.
	Name string
	// LDFlags are passed to the linker (-ldflags), e.g. the -X flags a
	// project's own release build sets.
	LDFlags string
}

// Build returns the path of the tool's binary, building it first unless a
// build of the same module files with the same Go exists. root is the
// repository root. logf, if not nil, is told about a build and how long it
// took (a first build of Helm takes minutes).
func Build(root string, tool Tool, logf func(format string, args ...any)) (string, error) {
	modDir := filepath.Join(root, tool.Dir)
	goVersion, err := goEnv(modDir, "GOVERSION")
	if err != nil {
		return "", err
	}
	key, err := moduleKey(modDir, goVersion+" "+tool.Package+" "+tool.LDFlags)
	if err != nil {
		return "", err
	}
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, tool.Name+"-"+key)
	bin := filepath.Join(dir, tool.Name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lock(filepath.Join(dir, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil { // built by whoever held the lock
		return bin, nil
	}
	start := time.Now()
	// Build to a temporary name and rename: a build killed half-way never
	// leaves a binary that the next run would trust.
	tmp := bin + ".tmp"
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", tool.LDFlags, "-o", tmp, tool.Package)
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly -buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %v\n%s", tool.Package, tool.Dir, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	if logf != nil {
		logf("built %s from %s in %v into %s", tool.Name, tool.Dir, time.Since(start).Round(time.Second), bin)
	}
	return bin, nil
}

// cacheDir is $ELECTD_TOOLS_CACHE, else <user cache dir>/electd-tools.
func cacheDir() (string, error) {
	if d := os.Getenv("ELECTD_TOOLS_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for tools (set ELECTD_TOOLS_CACHE): %w", err)
	}
	return filepath.Join(d, "electd-tools"), nil
}

// moduleKey hashes every file of the module (go.mod, go.sum, sources) with
// the build's settings (Go version, package, flags) and platform: any
// change to them makes a new build.
func moduleKey(modDir, settings string) (string, error) {
	var files []string
	err := filepath.WalkDir(modDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(files)
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", settings, runtime.GOOS, runtime.GOARCH)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(modDir, f)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func goEnv(dir, name string) (string, error) {
	cmd := exec.Command("go", "env", name)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}
