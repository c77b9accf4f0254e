package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/invariant"
)

// The fourth invariant: after the faults stop and the election settles,
// every participant is back to its idle footprint (docs/design/election-and-lease.md,
// "Watches"), which overlapping leaders alone would never show. A loop
// that keeps re-reading the queue, or a watch goroutine per reconnect,
// leaves the election safe and live and ZooKeeper loaded for good.
//
// Participants come and go in a run, so rest is not measured per run: it is
// what any participant of the run may do at rest whatever its role. A
// selector term's end costs each participant a re-check and a few reads, so
// the rates below are well above a rotation every couple of seconds and far
// below a loop that does not settle (20 re-checks a second).
var chaosRest = invariant.Rest{Rechecks: 1, Requests: 5}

// idleWindow is how long each look at the footprints lasts.
const idleWindow = 2 * time.Second

// maxWatches is how many data watches a session may have on the servers:
// a queue follower's predecessor, leader and own node; one node in race
// mode (wchc does not list child watches).
func (r *run) maxWatches() int {
	if r.spec.Mode == "race" {
		return 1
	}
	return 3
}

// restGoroutines records each participant's goroutines once it has
// settled, at the end of setup.
func (r *run) restGoroutines() {
	r.t.Helper()
	ctx, cancel := r.ctx(10 * time.Second)
	defer cancel()
	for _, p := range r.live() {
		f, err := p.Footprint(ctx)
		if err != nil {
			r.fatalf("footprint at rest: %v", err)
		}
		r.mu.Lock()
		r.restG = max(r.restG, f.Goroutines)
		r.mu.Unlock()
	}
}

// checkIdle waits until every live participant is idle: goroutines back to
// the most any participant held at rest, re-checks and election requests
// at rest rates (its /metrics), requests through its proxies at no more
// than twice what renewals and pings cost (the test's own count), and no
// more watches on the servers than its role sets.
func (r *run) checkIdle() {
	r.t.Helper()
	ctx, cancel := r.ctx(r.bound() + 20*time.Second)
	defer cancel()
	procs := r.live()
	rest := chaosRest
	r.mu.Lock()
	rest.Goroutines = r.restG
	r.mu.Unlock()
	rests := make([]invariant.Rest, len(procs))
	for i := range rests {
		rests[i] = rest
	}
	// Every participant renews every tenth of the timeout at most and pings
	// every third: twice that, the election's own requests at rest (a
	// selector's term ends every couple of seconds: a re-check and a few
	// reads each time, which its metric counts and the wire carries too),
	// and one more per window, is still at rest.
	wire := 2*(10+3)/r.timeout.Seconds() + rest.Requests + 1/idleWindow.Seconds()
	var last []string
	for {
		before := r.proxyRequests(procs)
		ws, err := electdtest.FootprintWindow(ctx, procs, idleWindow)
		if err != nil {
			break
		}
		after := r.proxyRequests(procs)
		last = last[:0]
		busiest := 0.0
		for i, p := range procs {
			for _, b := range invariant.Idle(rests[i], ws[i]) {
				last = append(last, p.Name+": "+b)
			}
			n := after[i] - before[i]
			rate := float64(n) / ws[i].Length.Seconds()
			busiest = max(busiest, rate)
			if rate > wire {
				last = append(last, fmt.Sprintf("%s: %d requests through its proxies in %v, more than %.1f/s",
					p.Name, n, ws[i].Length.Round(time.Millisecond), wire))
			}
		}
		last = append(last, r.excessWatches(ctx, procs)...)
		if len(last) == 0 {
			r.event("idle: every participant back to its footprint at rest (at most %.1f requests/s through its proxies, bound %.1f)", busiest, wire)
			return
		}
		if ctx.Err() != nil {
			break
		}
	}
	r.errorf(window(r.now()-idleWindow, r.now()), "not idle after the fault: %s", strings.Join(last, "; "))
}

// proxyRequests is each participant's request frames through its proxies.
func (r *run) proxyRequests(procs []*electdtest.Proc) []int {
	out := make([]int, len(procs))
	for i, p := range procs {
		for _, px := range r.proxiesOf(p) {
			_, n := px.Counts()
			out[i] += n
		}
	}
	return out
}

// excessWatches lists the participants whose session has more watches on
// the servers than their role sets.
func (r *run) excessWatches(ctx context.Context, procs []*electdtest.Proc) []string {
	all, err := r.env.ens.Watches()
	if err != nil {
		return []string{err.Error()}
	}
	var bad []string
	for _, p := range procs {
		v, err := p.View(ctx)
		if err != nil {
			return append(bad, err.Error())
		}
		if ws := all[electdtest.SessionID(v.Self.Session)]; len(ws) > r.maxWatches() {
			bad = append(bad, fmt.Sprintf("%s: %d watches %v, at most %d", p.Name, len(ws), ws, r.maxWatches()))
		}
	}
	return bad
}
