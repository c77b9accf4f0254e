package chaos

import (
	"fmt"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Result is what one run of one fault measured.
type Result struct {
	Fault string // e.g. "1 cut blackhole 2.0xT"
	Mode  string // e.g. "latch/hold"

	Failed bool
	// NotRun: the case was left out for lack of time before the test's
	// deadline; the test fails (Summary.NotRun).
	NotRun bool
	// Certain counts pairs of leadership spans of different participants
	// that the samples prove overlapped (invariant.CertainOverlaps): a
	// run with one fails.
	Certain int
	// Overlaps counts pairs of 200 answers from different participants
	// with intersecting [send, receive] intervals: possible, not proven.
	Overlaps int
	// Inferred counts pairs of leadership spans (consecutive 200s of one
	// participant with one token) of different participants that intersect.
	Inferred int
	// Leaderless is the longest time no participant was seen leading, from
	// the run's first leader to its end.
	Leaderless time.Duration
	// TimeToLeader is the longest measured time from a fault (or its heal)
	// to the next leader; Bound is what it was allowed.
	TimeToLeader time.Duration
	Bound        time.Duration
	// Orphans are nodes under the election path of no live participant (or
	// second nodes of one); Missing are live participants without a node.
	Orphans int
	Missing int
	// Requests went through the proxies during the run (traffic.go); Twice
	// counts POSTs that ran twice and requests unfenced, Late those over
	// their bound, Unclean those that ended otherwise than promised (or
	// showed an Electd-* header).
	Requests, Twice, Late, Unclean int
	Elapsed                        time.Duration
}

// Summary collects results per fault and mode, in first-seen order.
type Summary struct {
	mu   sync.Mutex
	rows []*summaryRow
}

type summaryRow struct {
	fault, mode                      string
	runs, failed, notRun             int
	certain, overlaps, inferred      int
	orphans, missing                 int
	requests, twice, late, unclean   int
	leaderless, toLeader, bound, dur time.Duration
}

// Add folds one run's result into its row.
func (s *Summary) Add(r Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var row *summaryRow
	for _, x := range s.rows {
		if x.fault == r.Fault && x.mode == r.Mode {
			row = x
		}
	}
	if row == nil {
		row = &summaryRow{fault: r.Fault, mode: r.Mode}
		s.rows = append(s.rows, row)
	}
	if r.NotRun {
		row.notRun++
		return
	}
	one := summaryRow{runs: 1, certain: r.Certain, overlaps: r.Overlaps, inferred: r.Inferred,
		orphans: r.Orphans, missing: r.Missing, requests: r.Requests, twice: r.Twice, late: r.Late, unclean: r.Unclean,
		leaderless: r.Leaderless, toLeader: r.TimeToLeader, bound: r.Bound, dur: r.Elapsed}
	if r.Failed {
		one.failed = 1
	}
	row.add(one)
}

// add folds o into a: sums of counts and of the time taken, maxima of the
// other times.
func (a *summaryRow) add(o summaryRow) {
	sums := a.counts()
	for i, n := range o.counts() {
		*sums[i] += *n
	}
	a.leaderless = max(a.leaderless, o.leaderless)
	a.toLeader = max(a.toLeader, o.toLeader)
	a.bound = max(a.bound, o.bound)
	a.dur += o.dur
}

// counts are the row's counters, in one order for add.
func (a *summaryRow) counts() []*int {
	return []*int{&a.runs, &a.failed, &a.notRun, &a.certain, &a.overlaps, &a.inferred,
		&a.orphans, &a.missing, &a.requests, &a.twice, &a.late, &a.unclean}
}

// String renders the table: one line per fault and mode, maxima over runs
// for times, sums for counts.
func (s *Summary) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "fault\tmode\truns\tfailed\tproven overlaps\toverlapping-200\tinferred\tlongest leaderless ms\tmax time-to-leader ms (bound)\torphans\tmissing\t"+
		"requests\ttwice/unfenced\tlate\tunclean\ttime s")
	var tot summaryRow
	for _, r := range s.rows {
		runs := fmt.Sprint(r.runs)
		if r.notRun > 0 {
			runs += fmt.Sprintf(" (%d not run)", r.notRun)
		}
		toLeader := "-"
		if r.bound > 0 {
			toLeader = fmt.Sprintf("%d (%d)", r.toLeader.Milliseconds(), r.bound.Milliseconds())
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\n", r.fault, r.mode, runs, r.failed,
			r.certain, r.overlaps, r.inferred, r.leaderless.Milliseconds(), toLeader, r.orphans, r.missing,
			r.requests, r.twice, r.late, r.unclean, r.dur.Seconds())
		tot.add(*r)
	}
	total := fmt.Sprint(tot.runs)
	if tot.notRun > 0 {
		total += fmt.Sprintf(" (%d not run)", tot.notRun)
	}
	fmt.Fprintf(w, "total\t\t%s\t%d\t%d\t%d\t%d\t\t\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\n", total, tot.failed, tot.certain, tot.overlaps, tot.inferred,
		tot.orphans, tot.missing, tot.requests, tot.twice, tot.late, tot.unclean, tot.dur.Seconds())
	w.Flush()
	return b.String()
}

// NotRun lists the fault and mode of every case left out, with how many
// times.
func (s *Summary) NotRun() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.rows {
		if r.notRun > 0 {
			out = append(out, fmt.Sprintf("%s %s (%d)", r.fault, r.mode, r.notRun))
		}
	}
	return out
}
