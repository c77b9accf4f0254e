package e2e

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/electd/electd/tests/harness/quote"
)

var (
	quoteFlag  = flag.String("e2e.quote", "", "the kept report the docs quote (default: the one BENCHMARKS.md names)")
	updateFlag = flag.Bool("update", false, "rewrite the docs' quoted regions from the kept report")
)

// The figures of the node's runs in BENCHMARKS.md, the README's chooser and
// docs/kubernetes.md are the kept report's, as QuoteRegions renders them:
// a figure edited by hand, or a report replaced without -update, fails.
func TestDocsQuoteTheKeptReport(t *testing.T) {
	const root = "../.."
	path := *quoteFlag
	if path == "" {
		b, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`<!-- e2e:run -->\nThe run quoted here is \[(docs/bench/e2e-[0-9a-f]+\.md)\]`).FindSubmatch(b)
		if m == nil {
			t.Fatal("BENCHMARKS.md names no kept report in its e2e:run region")
		}
		path = string(m[1])
	}
	r, err := ReadKeptReport(root, path)
	if err != nil {
		t.Fatal(err)
	}
	drift, err := QuoteRegions(root, r, Regions, *updateFlag)
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) > 0 && !*updateFlag {
		t.Errorf("these regions do not say what %s does: %s; go test ./tests/e2e -run TestDocsQuoteTheKeptReport -update -e2e.quote=%s rewrites them",
			path, strings.Join(drift, ", "), path)
	}
	unknown, err := quote.Unknown(root, "e2e", []string{"README.md", "BENCHMARKS.md", "docs/kubernetes.md"}, Regions)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range unknown {
		t.Errorf("%s is not one QuoteRegions writes", u)
	}
}

// QuoteRegions rewrites a region from the report and reports it while it
// differs; text outside the regions is left alone.
func TestQuoteRegionsFindAndRewriteDrift(t *testing.T) {
	root := t.TempDir()
	report := "Run at commit `abc` (working tree clean).\n\n| flavour | deletes | x |\n|---|---|---|\n| proxy | 10 | 0.50 s / 0.66 s |\n"
	doc := "before\n<!-- e2e:cell -->\n1.00 s\n<!-- /e2e:cell -->\nafter\n"
	os.MkdirAll(filepath.Join(root, "docs", "bench"), 0o755)
	os.WriteFile(filepath.Join(root, "docs", "bench", "e2e-abc.md"), []byte(report), 0o644)
	os.WriteFile(filepath.Join(root, "doc.md"), []byte(doc), 0o644)
	r, err := ReadKeptReport(root, "docs/bench/e2e-abc.md")
	if err != nil {
		t.Fatal(err)
	}
	regions := []QuoteRegion{{File: "doc.md", Name: "cell", Render: func(r *KeptReport) (string, error) { return r.cell("proxy", 2, false) }}}
	if drift, err := QuoteRegions(root, r, regions, false); err != nil || len(drift) != 1 {
		t.Fatalf("a hand-edited figure: drift %v, %v", drift, err)
	}
	if _, err := QuoteRegions(root, r, regions, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "doc.md")); string(b) != "before\n<!-- e2e:cell -->\n0.50 s\n<!-- /e2e:cell -->\nafter\n" {
		t.Errorf("rewritten: %q", b)
	}
	if drift, err := QuoteRegions(root, r, regions, false); err != nil || len(drift) != 0 {
		t.Errorf("after the rewrite: drift %v, %v", drift, err)
	}
}
