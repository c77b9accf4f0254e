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

	"github.com/electd/electd/tests/harness/quote"
)

// A make e2e report kept in docs/bench is what BENCHMARKS.md's Kubernetes
// section, the README's flavour chooser and docs/kubernetes.md quote: the
// regions between <!-- e2e:NAME --> and <!-- /e2e:NAME --> in those files
// are written from the report's lines by QuoteRegions (tests/docs keeps
// them so, -update rewrites them), never by hand.

// KeptReport is a kept report, as far as the docs quote it.
type KeptReport struct {
	Path   string // relative to the repository, docs/bench/e2e-<commit>.md
	First  string // its "Run at commit ..." line
	Failed bool   // it starts with "**This run failed**"
	// LowerMedian: its medians of an even count are the lower middle
	// value (reports written before StatsOf took the mean of the two).
	LowerMedian bool
	rows        map[string][]string
	// unannounced: the crash, cut-off and rotation table's rows, by
	// flavour and disruption ("proxy/cut off 30 s").
	unannounced map[string][]string
	sections    map[string][]string // a flavour's lines
}

// QuotedFiles are the files that quote an e2e report.
var QuotedFiles = []string{"README.md", "BENCHMARKS.md", "docs/kubernetes.md"}

// NamedKept is the kept report BENCHMARKS.md's e2e:run region names.
func NamedKept(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		return "", err
	}
	m := namedRE.FindSubmatch(b)
	if m == nil {
		return "", errors.New("BENCHMARKS.md names no kept report in its e2e:run region")
	}
	return string(m[1]), nil
}

var namedRE = regexp.MustCompile(`<!-- e2e:run -->\nThe run quoted here is \[(docs/bench/e2e-[0-9a-f]+\.md)\]`)

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
		case strings.HasPrefix(l, "Each cell: median"):
			r.LowerMedian = !strings.Contains(l, "mean of the two middle values")
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

// QuoteRegion is one generated region of a file (tests/harness/quote).
type QuoteRegion = quote.Region[*KeptReport]

// QuoteRegions renders every e2e region of regions in the files under
// root from r (quote.Rewrite). With write it rewrites the files; it
// returns the regions whose text differs from what r gives.
func QuoteRegions(root string, r *KeptReport, regions []QuoteRegion, write bool) ([]string, error) {
	return quote.Rewrite(root, "e2e", r, regions, write)
}
