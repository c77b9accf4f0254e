package docs

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/electd/electd/tests/bench"
	"github.com/electd/electd/tests/e2e"
	"github.com/electd/electd/tests/harness/quote"
)

var (
	benchReport = flag.String("bench.quote", "", "the kept make bench report the docs quote (default: the newest in docs/bench)")
	e2eReport   = flag.String("e2e.quote", "", "the kept make e2e report the docs quote (default: the one BENCHMARKS.md names)")
)

// Every figure of make bench and make e2e in README.md, BENCHMARKS.md and
// docs/kubernetes.md is its kept report's, as the kind's Regions render
// it: a figure edited by hand, or a new report without -update
// (make quote), fails.
func TestDocsQuoteTheKeptReports(t *testing.T) {
	for kind, k := range map[string]interface{ Check(testing.TB, bool) }{
		"bench": quote.Kept[*bench.KeptReport]{Root: repo, Kind: "bench", Path: *benchReport,
			Find: bench.NewestKept, Read: bench.ReadKeptReport, Files: bench.QuotedFiles, Regions: bench.Regions,
			Fix: "make quote"},
		"e2e": quote.Kept[*e2e.KeptReport]{Root: repo, Kind: "e2e", Path: *e2eReport,
			Find: e2e.NamedKept, Read: e2e.ReadKeptReport, Files: e2e.QuotedFiles, Regions: e2e.Regions,
			Fix: "go test ./tests/docs -run TestDocsQuoteTheKeptReports -update -e2e.quote=<that report>"},
	} {
		t.Run(kind, func(t *testing.T) { k.Check(t, *update) })
	}
}

// figureRE is a measured figure: a number with a unit of time, size or rate.
var figureRE = regexp.MustCompile(`(^|[\s(])[0-9][0-9,.]*\s?(ms|µs|us|s|min|MiB|KiB|GiB|%|/s|requests/s|requests a second)([\s,;:)]|\.(\s|$)|$)`)

// regionsRE is a quoted region, of either kind.
var regionsRE = regexp.MustCompile(`(?s)<!-- (bench|e2e):([a-z0-9-]+) -->\n.*?<!-- /(bench|e2e):([a-z0-9-]+) -->`)

// BENCHMARKS.md publishes no figure outside a quoted region: every one
// comes from a kept report.
func TestBenchmarksFiguresAreQuoted(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	rest := regionsRE.ReplaceAllString(string(b), "")
	for i, l := range strings.Split(rest, "\n") {
		if m := figureRE.FindString(l); m != "" {
			t.Errorf("BENCHMARKS.md, outside the quoted regions (line %d of what remains): %q in %q", i+1, m, l)
		}
	}
}
