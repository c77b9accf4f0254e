// Package quote keeps the figures the docs publish equal to a kept report:
// a region between <!-- KIND:NAME --> and <!-- /KIND:NAME --> in a
// Markdown file is written from the report by its Region's Render, never
// by hand. make e2e's report (KIND e2e, tests/e2e) and make bench's
// (KIND bench, tests/bench) are quoted this way; tests/docs fails while a
// region differs, and rewrites it with -update.
package quote

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Region is one generated region of a file, rendered from a report R.
type Region[R any] struct {
	File, Name string
	Render     func(r R) (string, error)
}

// Rewrite renders every region of kind in the files under root from r.
// With write it rewrites the files; it returns the regions whose text
// differs from what r gives (all of them written, with write).
func Rewrite[R any](root, kind string, r R, regions []Region[R], write bool) ([]string, error) {
	byFile := map[string][]Region[R]{}
	for _, q := range regions {
		byFile[q.File] = append(byFile[q.File], q)
	}
	var drift []string
	var errs []error
	for file, qs := range byFile {
		path := filepath.Join(root, file)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		text := string(b)
		for _, q := range qs {
			want, err := q.Render(r)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s, region %s: %w", file, q.Name, err))
				continue
			}
			open, close := "<!-- "+kind+":"+q.Name+" -->\n", "<!-- /"+kind+":"+q.Name+" -->"
			i, j := strings.Index(text, open), strings.Index(text, close)
			if i < 0 || j < i {
				errs = append(errs, fmt.Errorf("%s: no region %s (%s ... %s)", file, q.Name, strings.TrimSpace(open), close))
				continue
			}
			want = WrapProse(strings.TrimSuffix(want, "\n"), 100) + "\n"
			if text[i+len(open):j] != want {
				drift = append(drift, file+": "+q.Name)
				text = text[:i+len(open)] + want + text[j:]
			}
		}
		if write {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				return nil, err
			}
		}
	}
	sort.Strings(drift)
	return drift, errors.Join(errs...)
}

// Unknown lists the regions of kind in files (under root) that regions
// does not write, or that are closed under another name: text that looks
// generated but is not checked.
func Unknown[R any](root, kind string, files []string, regions []Region[R]) ([]string, error) {
	known := map[string]bool{}
	for _, q := range regions {
		known[q.File+" "+q.Name] = true
	}
	re := regexp.MustCompile(`(?s)<!-- ` + regexp.QuoteMeta(kind) + `:([a-z0-9-]+) -->\n(.*?)<!-- /` + regexp.QuoteMeta(kind) + `:([a-z0-9-]+) -->`)
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if m[1] != m[3] || !known[f+" "+m[1]] {
				out = append(out, fmt.Sprintf("%s: region %s (closed as %s)", f, m[1], m[3]))
			}
		}
	}
	return out, nil
}

// WrapProse fills each paragraph of text to width columns, as the docs are
// written; tables, quotes, lists and code blocks are left as they are.
func WrapProse(text string, width int) string {
	paras := strings.Split(text, "\n\n")
	for i, p := range paras {
		if strings.HasPrefix(p, "|") || strings.HasPrefix(p, ">") || strings.HasPrefix(p, "```") || strings.HasPrefix(p, "- ") {
			continue
		}
		var lines []string
		line := ""
		for _, w := range strings.Fields(p) {
			if line != "" && len(line)+1+len(w) > width {
				lines = append(lines, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		paras[i] = strings.Join(append(lines, line), "\n")
	}
	return strings.Join(paras, "\n\n")
}
