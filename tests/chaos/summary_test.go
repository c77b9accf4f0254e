package chaos

import (
	"strings"
	"testing"
)

// A case left out is reported as not run, never counted as a run.
func TestSummaryReportsCasesNotRun(t *testing.T) {
	var s Summary
	s.Add(Result{Fault: "pause leader", Mode: "latch/hold"})
	s.Add(Result{Fault: "pause leader", Mode: "latch/hold", NotRun: true})
	s.Add(Result{Fault: "cut zk", Mode: "latch/hold", NotRun: true})
	if got, want := strings.Join(s.NotRun(), "; "), "pause leader latch/hold (1); cut zk latch/hold (1)"; got != want {
		t.Errorf("NotRun() = %q, want %q", got, want)
	}
	table := s.String()
	for _, want := range []string{"1 (1 not run)", "0 (1 not run)", "1 (2 not run)"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "skipped") {
		t.Errorf("the table calls a case skipped:\n%s", table)
	}
}
