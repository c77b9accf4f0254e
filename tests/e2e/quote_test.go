package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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

// The crash and lost-node table is read apart from the delete table, and
// its regions render from its rows (or say which row is missing).
func TestKeptReportReadsTheUnannouncedTable(t *testing.T) {
	root := t.TempDir()
	rep := NewReport()
	var fl []Flavour
	for _, f := range Flavours[:3] {
		fl = append(fl, f)
		rep.Deletes(f.Name, []Failover{{Service: 170 * time.Millisecond}})
		rep.Unannounced(f.Name, Unannounced{What: crashName, Silent: 40 * time.Millisecond})
		rep.Unannounced(f.Name, Unannounced{What: cutOffName, F: Failover{Changes: 1, Service: 10400 * time.Millisecond, Failed: 41}, Unreached: 41, Withdrawn: 3430 * time.Millisecond})
	}
	md := "Run at commit `abc` (working tree clean).\n\n" + rep.Markdown(fl)
	if !strings.Contains(md, unannouncedHeader+"\n|---|---|---|---|---|---|---|---|\n") {
		t.Errorf("the table's separator does not match its header:\n%s", md)
	}
	os.MkdirAll(filepath.Join(root, "docs", "bench"), 0o755)
	os.WriteFile(filepath.Join(root, "docs", "bench", "e2e-abc.md"), []byte(md), 0o644)
	r, err := ReadKeptReport(root, "docs/bench/e2e-abc.md")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(r.rows), 3; got != want {
		t.Errorf("delete rows %d, want %d: %v", got, want, r.rows)
	}
	got, err := renderLostNode(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := "forwarding proxy stopped routing to the lost pod after 3.43 s and answered from the new leader after 10.40 s, with 41 failed requests (41 of them never reached an electd)"; !strings.Contains(got, want) {
		t.Errorf("lost-node region %q lacks %q", got, want)
	}
	if _, err := renderLost(r); err == nil || !strings.Contains(err.Error(), rotationName) {
		t.Errorf("without rotation rows: %v, want an error naming them", err)
	}
}
