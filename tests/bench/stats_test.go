package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The median of an even count is the mean of the two middle values, not
// the lower one the nearest rank gives.
func TestP50IsTheMeanOfTheMiddleValues(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		d    Dist
		want time.Duration
	}{
		{nil, 0},
		{Dist{3 * ms}, 3 * ms},
		{Dist{4 * ms, 1 * ms}, 2500 * time.Microsecond},
		{Dist{9 * ms, 1 * ms, 5 * ms}, 5 * ms},
		{Dist{8 * ms, 2 * ms, 4 * ms, 6 * ms}, 5 * ms},
	} {
		if got := tc.d.P50(); got != tc.want {
			t.Errorf("%v: P50 %v, want %v", tc.d, got, tc.want)
		}
	}
}

// A new report replaces the older ones of its kind and no other kind's.
func TestReportFileKeepsTheNewestOfItsKind(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"bench-abc123.md", "bench-def456-dirty.md", "forward-abc123.md", "e2e-abc123.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &Report{Machine: Machine{CPUs: 2, Model: "Test CPU"}, StartLoad: "1.00 0.50 0.25", EndLoad: "2.00 1.00 0.50"}
	path, err := r.ReportFile(dir, Build{Commit: "0123abc", Clean: true}, []string{"-only", "x"})
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, " "), "bench-0123abc.md e2e-abc123.md forward-abc123.md"; got != want {
		t.Errorf("files %q, want %q", got, want)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"commit: 0123abc; clean tree: yes", "2 CPUs, Test CPU", "at the start 1.00 0.50 0.25, at the end 2.00 1.00 0.50"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report head lacks %q:\n%s", want, b)
		}
	}
}
