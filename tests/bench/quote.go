package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/electd/electd/tests/harness/quote"
)

// A make bench report kept in docs/bench is what BENCHMARKS.md and the
// README's Performance section quote: the regions between
// <!-- bench:NAME --> and <!-- /bench:NAME --> are written from the
// report's lines (tests/harness/quote), never by hand. tests/docs keeps them
// so; make quote rewrites them from the newest kept report.

// KeptReport is a kept report, as far as the docs quote it.
type KeptReport struct {
	Path  string     // relative to the repository: docs/bench/bench-<commit>.md
	Head  []string   // its "- command: ..." lines
	paras [][]string // the report as printed, in blank-line-separated paragraphs
}

// ReadKeptReport parses the report at root/path.
func ReadKeptReport(root, path string) (*KeptReport, error) {
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	r := &KeptReport{Path: path}
	in := false
	var para []string
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case l == "```text":
			in = true
		case in && l == "```":
			in = false
		case !in && strings.HasPrefix(l, "- "):
			r.Head = append(r.Head, l)
		case in && l == "":
			if len(para) > 0 {
				r.paras = append(r.paras, para)
			}
			para = nil
		case in:
			para = append(para, l)
		}
	}
	if len(para) > 0 {
		r.paras = append(r.paras, para)
	}
	if len(r.Head) == 0 || len(r.paras) == 0 {
		return nil, fmt.Errorf("%s: no head or no report", path)
	}
	return r, nil
}

// NewestKept is the newest full report in root/docs/bench (there is one:
// ReportFile removes the older ones).
func NewestKept(root string) (string, error) {
	m, err := filepath.Glob(filepath.Join(root, "docs", "bench", "bench-*.md"))
	if err != nil {
		return "", err
	}
	if len(m) != 1 {
		return "", fmt.Errorf("docs/bench holds %d full bench reports, want 1: %v", len(m), m)
	}
	return filepath.ToSlash(filepath.Join("docs", "bench", filepath.Base(m[0]))), nil
}

// para is the paragraph whose first line starts with prefix.
func (r *KeptReport) para(prefix string) ([]string, error) {
	for _, p := range r.paras {
		if strings.HasPrefix(p[0], prefix) {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%s: no paragraph %q", r.Path, prefix)
}

// line is the first line of the paragraph prefix that contains s.
func (r *KeptReport) line(prefix, s string) (string, error) {
	p, err := r.para(prefix)
	if err != nil {
		return "", err
	}
	for _, l := range p {
		if strings.Contains(l, s) {
			return l, nil
		}
	}
	return "", fmt.Errorf("%s: no line %q under %q", r.Path, s, prefix)
}

// find applies re to the first line of paragraph prefix containing s and
// returns its groups.
func (r *KeptReport) find(prefix, s string, re *regexp.Regexp) ([]string, error) {
	l, err := r.line(prefix, s)
	if err != nil {
		return nil, err
	}
	m := re.FindStringSubmatch(l)
	if m == nil {
		return nil, fmt.Errorf("%s: %q does not match %s", r.Path, l, re)
	}
	return m[1:], nil
}

// distRE reads a Dist as printed: p50, p90, max, n.
var distRE = regexp.MustCompile(`p50 ([0-9.]+ ms)  p90 ([0-9.]+ ms)  max ([0-9.]+ ms)  \(n=([0-9]+)\)`)

// dist is "p50 x ms, p90 y ms, max z ms (n=N)" from a line.
func (r *KeptReport) dist(prefix, s string) (string, error) {
	m, err := r.find(prefix, s, distRE)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("p50 %s, p90 %s, max %s (n=%s)", m[0], m[1], m[2], m[3]), nil
}

// block is a paragraph as a fenced block, as printed.
func (r *KeptReport) block(prefixes ...string) (string, error) {
	var out []string
	for _, p := range prefixes {
		lines, err := r.para(p)
		if err != nil {
			return "", err
		}
		if len(out) > 0 {
			out = append(out, "")
		}
		out = append(out, lines...)
	}
	return "```text\n" + strings.Join(out, "\n") + "\n```", nil
}

// rel is the report's path from a file in dir (relative to the root).
func (r *KeptReport) rel(dir string) string {
	p, err := filepath.Rel(dir, r.Path)
	if err != nil {
		return r.Path
	}
	return filepath.ToSlash(p)
}

// BenchRegion is one generated region of a file.
type BenchRegion = quote.Region[*KeptReport]

// QuotedFiles are the files that quote a bench report.
var QuotedFiles = []string{"README.md", "BENCHMARKS.md"}
