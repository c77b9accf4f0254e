package bench

import (
	"fmt"
	"io"
	"time"
)

// A handoff's steps, in order, as the two processes log them (JSON lines
// with nanosecond times; one host, one clock) and as the bench sees them.
// The debug lines come from internal/election and cmd/electd.
type stepDef struct {
	name  string
	who   string // "leader", "successor" or "bench"
	msg   string // the log line's msg
	watch string // for "watch fired": which watch
}

var handoffSteps = []stepDef{
	{"signal received, shutdown starts", "leader", "shutting down", ""},
	{"drained: answers 503", "leader", "draining: answering not-leader until shutdown", ""},
	{"delete sent", "leader", "deleting own node", ""},
	{"delete acknowledged (released)", "leader", "released", ""},
	{"successor's predecessor watch fired", "successor", "watch fired", "predecessor"},
	{"successor's re-check read", "successor", "re-checked the queue", ""},
	{"claimed", "successor", "claimed", ""},
	{"status published (elected)", "successor", "elected", ""},
	{"HTTP 200 read by the client", "bench", "", ""},
	{"leader's session closed", "leader", "zookeeper session closed", ""},
}

// Timeline is one handoff: each step's time after SIGTERM was sent; a
// negative value means the step was not found.
type Timeline []time.Duration

// readTimeline finds the steps in the logs of leader and successor.
func readTimeline(t0, answered time.Time, leader, successor *daemon) Timeline {
	logs := map[string][]logLine{"leader": leader.logLines(), "successor": successor.logLines()}
	tl := make(Timeline, len(handoffSteps))
	for i, s := range handoffSteps {
		tl[i] = -1
		if s.who == "bench" {
			tl[i] = answered.Sub(t0)
			continue
		}
		for _, l := range logs[s.who] {
			// A line a little before t0 is the same clock read a moment
			// apart; anything earlier belongs to a previous round.
			if l.Msg == s.msg && (s.watch == "" || l.Watch == s.watch) && l.Time.After(t0.Add(-time.Millisecond)) {
				tl[i] = l.Time.Sub(t0)
				break
			}
		}
	}
	return tl
}

// writeTimeline prints each step's p50 and p90 over the rounds, and the
// p50 of the gap from the step before.
func writeTimeline(w io.Writer, tls []Timeline) {
	fmt.Fprintf(w, "  %-40s %10s %10s %12s\n", "step (time after SIGTERM sent)", "p50", "p90", "p50 of gap")
	var prev Dist
	for i, s := range handoffSteps {
		var at, gap Dist
		for j, tl := range tls {
			if tl[i] < 0 {
				continue
			}
			at = append(at, tl[i])
			if i > 0 && prev != nil && j < len(tls) && tls[j][i-1] >= 0 {
				gap = append(gap, tl[i]-tls[j][i-1])
			}
		}
		if len(at) == 0 {
			fmt.Fprintf(w, "  %-40s %10s\n", s.name, "not logged")
			prev = nil
			continue
		}
		g := "-"
		if len(gap) > 0 {
			g = ms(gap.P50())
		}
		fmt.Fprintf(w, "  %-40s %10s %10s %12s\n", s.name, ms(at.P50()), ms(at.P90()), g)
		prev = at
	}
}
