package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// A make e2e report kept in docs/bench is what BENCHMARKS.md's Kubernetes
// section, the README's flavour chooser and docs/kubernetes.md quote: the
// regions between <!-- e2e:NAME --> and <!-- /e2e:NAME --> in those files
// are written from the report's lines by QuoteRegions (quote_test.go keeps
// them so, -update rewrites them), never by hand.

// KeptReport is a kept report, as far as the docs quote it.
type KeptReport struct {
	Path   string // relative to the repository, docs/bench/e2e-<commit>.md
	First  string // its "Run at commit ..." line
	Failed bool   // it starts with "**This run failed**"
	rows   map[string][]string
	// unannounced: the crash, cut-off and rotation table's rows, by
	// flavour and disruption ("proxy/cut off 30 s").
	unannounced map[string][]string
	sections    map[string][]string // a flavour's lines
}

// ReadKeptReport parses the report at root/path.
func ReadKeptReport(root, path string) (*KeptReport, error) {
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	r := &KeptReport{Path: path, rows: map[string][]string{}, unannounced: map[string][]string{}, sections: map[string][]string{}}
	section, table := "", ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| flavour") {
			table = l
		}
		switch {
		case strings.HasPrefix(l, "**This run failed**"):
			r.Failed = true
		case strings.HasPrefix(l, "Run at commit"):
			r.First = l
		case strings.HasPrefix(l, "### "):
			section = strings.TrimPrefix(l, "### ")
		case section == "" && strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| flavour"):
			cells := strings.Split(strings.Trim(l, "| "), " | ")
			if table == unannouncedHeader && len(cells) > 1 {
				r.unannounced[cells[0]+"/"+cells[1]] = cells
				continue
			}
			r.rows[cells[0]] = cells
		case section != "":
			r.sections[section] = append(r.sections[section], l)
		}
	}
	if r.First == "" || len(r.rows) == 0 {
		return nil, fmt.Errorf("%s: no run line or no delete table", path)
	}
	return r, nil
}

// The delete table's columns.
const (
	colElected = 2
	colAnswer  = 4
	colFailed  = 6
)

// cell is one of a flavour's medians or maxima ("1.27 s" of "1.27 s / 2.86 s").
func (r *KeptReport) cell(flavour string, col int, max bool) (string, error) {
	row, ok := r.rows[flavour]
	if !ok || len(row) <= col {
		return "", fmt.Errorf("%s: no %s row", r.Path, flavour)
	}
	med, mx, _ := strings.Cut(row[col], " / ")
	if max {
		return mx, nil
	}
	return med, nil
}

// seconds reads "1.27 s".
func seconds(s string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSuffix(s, " s"), 64)
	return f
}

// linesStarting returns a flavour's report lines that start with prefix.
func (r *KeptReport) linesStarting(flavour, prefix string) []string {
	var out []string
	for _, l := range r.sections[flavour] {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// block returns the fenced block that follows a flavour's line starting
// with prefix (the drain's kubectl output), with its fences.
func (r *KeptReport) block(flavour, prefix string) []string {
	lines := r.sections[flavour]
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "```") {
				for k := j + 1; k < len(lines); k++ {
					if lines[k] == "```" {
						return lines[j : k+1]
					}
				}
			}
			if lines[j] != "" {
				return nil
			}
		}
	}
	return nil
}

// deleteLine is what one delete's line says, from the DELETE: when the
// kubelet stopped the app, the app's SIGTERM, its exit and the sidecar's
// "shutting down".
var deleteLine = regexp.MustCompile(`stops the app \+([0-9.]+) s; app SIGTERM \+([0-9.]+) s, app exit \+([0-9.]+) s, sidecar "shutting down" \+([0-9.]+) s`)

// span is the smallest and largest of the deletes' values of one kind
// (kind picks it from the four deleteLine measures).
func (r *KeptReport) span(flavour string, kind func(stop, sig, exit, side float64) float64) (string, error) {
	var vs []float64
	for _, l := range r.sections[flavour] {
		if m := deleteLine.FindStringSubmatch(l); m != nil {
			f := make([]float64, 4)
			for i := range f {
				f[i], _ = strconv.ParseFloat(m[i+1], 64)
			}
			vs = append(vs, kind(f[0], f[1], f[2], f[3]))
		}
	}
	if len(vs) == 0 {
		return "", fmt.Errorf("%s: no delete lines for %s", r.Path, flavour)
	}
	sort.Float64s(vs)
	return fmt.Sprintf("%.2f-%.2f s", vs[0], vs[len(vs)-1]), nil
}

// measure reads "<label> <n.nn> s" from a line.
func measure(line, label string) (string, error) {
	m := regexp.MustCompile(regexp.QuoteMeta(label) + ` ([0-9.]+ s)`).FindStringSubmatch(line)
	if m == nil {
		return "", fmt.Errorf("no %q in %q", label, line)
	}
	return m[1], nil
}

// wrapProse fills each paragraph of text to width columns, as the docs are
// written; tables, quotes and code blocks are left as they are.
func wrapProse(text string, width int) string {
	paras := strings.Split(text, "\n\n")
	for i, p := range paras {
		if strings.HasPrefix(p, "|") || strings.HasPrefix(p, ">") || strings.HasPrefix(p, "```") {
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

// QuoteRegion is one generated region of a file.
type QuoteRegion struct {
	File, Name string
	Render     func(r *KeptReport) (string, error)
}

var regionRE = regexp.MustCompile(`(?s)<!-- e2e:([a-z-]+) -->\n(.*?)<!-- /e2e:([a-z-]+) -->`)

// QuoteRegions renders every region of regions in the files under root
// from r. With write it rewrites the files; it returns the regions whose
// text differs from what r gives (all of them written, with write).
func QuoteRegions(root string, r *KeptReport, regions []QuoteRegion, write bool) ([]string, error) {
	byFile := map[string][]QuoteRegion{}
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
			open, close := "<!-- e2e:"+q.Name+" -->\n", "<!-- /e2e:"+q.Name+" -->"
			i, j := strings.Index(text, open), strings.Index(text, close)
			if i < 0 || j < i {
				errs = append(errs, fmt.Errorf("%s: no region %s (%s ... %s)", file, q.Name, strings.TrimSpace(open), close))
				continue
			}
			want = wrapProse(strings.TrimSuffix(want, "\n"), 100) + "\n"
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
