package promtest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeFile writes content to dir/name, failing t on an error, and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSpeedUpDividesWindowsAndFors(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "rules.yaml", `groups:
  - name: g
    rules:
      - alert: A
        expr: sum by (e) (increase(x_total{le="5"}[10m])) >= 4
      - alert: B
        expr: >-
          histogram_quantile(0.99, rate(y_bucket[2m]))
            >= 0.1 * z
        for: 5m
        labels: {severity: warning}
`)
	dst := filepath.Join(dir, "fast.yaml")
	got, err := SpeedUp(src, dst, 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].FastExpr != `sum by (e) (increase(x_total{le="5"}[30s])) >= 4` || got[0].For != 0 ||
		!slices.Equal(got[0].Windows, []time.Duration{10 * time.Minute}) {
		t.Errorf("A: %+v", got[0])
	}
	if b := got[1]; strings.Join(strings.Fields(b.FastExpr), " ") != "histogram_quantile(0.99, rate(y_bucket[6s])) >= 0.1 * z" ||
		b.For != 5*time.Minute || b.FastFor != 15*time.Second {
		t.Errorf("B: %+v", b)
	}
	out, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[30s]", "[6s]", "for: 15s", "severity: warning", ">= 0.1 * z"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the copy lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []struct {
		expr   string
		factor int
	}{{"rate(y[5m] offset 1m)", 20}, {"max_over_time(y[5m:1m])", 20}, {"rate(y[5m])", 7}} {
		writeFile(t, dir, "rules.yaml", "groups:\n  - name: g\n    rules:\n      - alert: C\n        expr: "+bad.expr+"\n")
		if _, err := SpeedUp(src, dst, bad.factor); err == nil {
			t.Errorf("SpeedUp took %s divided by %d", bad.expr, bad.factor)
		}
	}
}
