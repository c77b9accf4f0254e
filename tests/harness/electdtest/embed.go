package electdtest

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// embedInputs lists, relative to root, the files that the //go:embed lines of goFiles
// (relative to root) name: they are compiled into the binary as much as the Go files
// are (the status page's HTML, script and style, say), so a change to one must be a
// new build. A pattern is globbed in its file's directory; a directory it names counts
// with every file under it. Patterns that match nothing are left to the go tool to
// report.
func embedInputs(root string, goFiles []string) ([]string, error) {
	var out []string
	for _, rel := range goFiles {
		if !strings.HasSuffix(rel, ".go") {
			continue
		}
		patterns, err := embedPatterns(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(root, filepath.Dir(rel))
		for _, p := range patterns {
			matches, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(p))) // a bad pattern fails the build
			for _, m := range matches {
				err := filepath.WalkDir(m, func(path string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					r, _ := filepath.Rel(root, path)
					out = append(out, r)
					return nil
				})
				if err != nil {
					return nil, err
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// embedPatterns reads the patterns of a Go file's //go:embed lines: space-separated,
// each possibly quoted, with any "all:" prefix dropped.
func embedPatterns(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "//go:embed ")
		if !ok {
			continue
		}
		for _, p := range strings.Fields(rest) {
			if u, err := strconv.Unquote(p); err == nil {
				p = u
			}
			out = append(out, strings.TrimPrefix(p, "all:"))
		}
	}
	return out, sc.Err()
}
