package bench

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/electd/electd/tests/harness/quote"
)

var quoteFlag, updateFlag = quote.Flags("bench", "the one docs/bench holds")

// The figures of make bench in the README and BENCHMARKS.md are the kept
// report's, as Regions render them: a figure edited by hand, or a
// new report without -update (make quote), fails.
func TestDocsQuoteTheKeptBenchReport(t *testing.T) {
	quote.Kept[*KeptReport]{Root: "../..", Kind: "bench", Path: *quoteFlag, Find: NewestKept, Read: ReadKeptReport,
		Files: QuotedFiles, Regions: Regions, Fix: "make quote"}.Check(t, *updateFlag)
}

// figureRE is a measured figure: a number with a unit of time, size or rate.
var figureRE = regexp.MustCompile(`(^|[\s(])[0-9][0-9,.]*\s?(ms|µs|us|s|min|MiB|KiB|GiB|%|/s|requests/s|requests a second)([\s,;:)]|\.(\s|$)|$)`)

// regionsRE is a quoted region, of either kind.
var regionsRE = regexp.MustCompile(`(?s)<!-- (bench|e2e):([a-z0-9-]+) -->\n.*?<!-- /(bench|e2e):([a-z0-9-]+) -->`)

// BENCHMARKS.md publishes no figure outside a quoted region: every one
// comes from a kept report.
func TestBenchmarksFiguresAreQuoted(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("../..", "BENCHMARKS.md"))
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
