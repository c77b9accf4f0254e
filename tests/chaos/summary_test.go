package chaos

import (
	"strings"
	"testing"
	"time"
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

// Runs of one case fold into one row: counts and time taken summed, the
// other times at their maxima.
func TestSummaryFoldsRuns(t *testing.T) {
	var s Summary
	s.Add(Result{Fault: "kill9", Mode: "latch/hold", Failed: true, Certain: 1, Requests: 10, Twice: 2,
		Leaderless: 300 * time.Millisecond, TimeToLeader: 2 * time.Second, Bound: 5 * time.Second, Elapsed: 3 * time.Second})
	s.Add(Result{Fault: "kill9", Mode: "latch/hold", Requests: 5, Late: 1, Orphans: 1,
		Leaderless: 500 * time.Millisecond, TimeToLeader: time.Second, Bound: 4 * time.Second, Elapsed: 2 * time.Second})
	want := summaryRow{fault: "kill9", mode: "latch/hold", runs: 2, failed: 1, certain: 1, orphans: 1,
		requests: 15, twice: 2, late: 1, leaderless: 500 * time.Millisecond, toLeader: 2 * time.Second,
		bound: 5 * time.Second, dur: 5 * time.Second}
	if len(s.rows) != 1 || *s.rows[0] != want {
		t.Fatalf("rows %+v, want one: %+v", s.rows, want)
	}
	if table := s.String(); !strings.Contains(table, "500  ") || !strings.Contains(table, "2000 (5000)") {
		t.Errorf("the table lacks the maxima:\n%s", table)
	}
}
