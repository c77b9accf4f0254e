package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/wait"
)

// stall is how long nobody must be seen answering for the observer to count
// itself blind (invariant.Blind): far above its polling period. A loaded
// machine stalls it, and everything else, for a second or more; time the
// observer did not see is not held against the bound.
const stall = 100 * time.Millisecond

// expectLeader checks liveness: a participant not in exclude is seen leading
// within the bound after from (time the observer was blind left out). It
// returns that first 200.
func (r *run) expectLeader(label string, from time.Duration, exclude ...*electdtest.Proc) (invariant.Sample, bool) {
	r.t.Helper()
	var ex []string
	for _, p := range exclude {
		ex = append(ex, p.Name)
	}
	bound := r.bound()
	wait := from + bound + 5*time.Second - r.now()
	ctx, cancel := r.ctx(max(wait, 0))
	defer cancel()
	s, err := r.obs.WaitLeader(ctx, from, ex...)
	r.mu.Lock()
	r.res.Bound = max(r.res.Bound, bound)
	r.mu.Unlock()
	if err != nil {
		r.errorf(window(from-time.Second, r.now()), "liveness (%s): no leader (excluding %v) within %s of %s", label, ex, bound, invariant.Ms(from))
		return s, false
	}
	elapsed := invariant.SeenWithout(window(from, s.Recv), invariant.Blind(r.obs.Samples(), from, s.Recv, stall))
	r.mu.Lock()
	r.res.TimeToLeader = max(r.res.TimeToLeader, elapsed)
	r.mu.Unlock()
	r.event("liveness (%s): %s leads %s after %s (%s seen; bound %s)", label, s.Who, invariant.Ms(s.Recv-from), invariant.Ms(from), invariant.Ms(elapsed), invariant.Ms(bound))
	if elapsed > bound {
		r.errorf(window(from-time.Second, s.Recv+time.Second), "liveness (%s): first leader %s after %s, over the bound %s", label, s.Who, invariant.Ms(elapsed), invariant.Ms(bound))
		return s, false
	}
	return s, true
}

// expectNoLongGap checks liveness over a window: no part of [from, to]
// longer than the bound went without a leader seen (where the observer was
// blind, nothing was seen either way).
func (r *run) expectNoLongGap(label string, from, to time.Duration) {
	r.t.Helper()
	ctx, cancel := r.ctx(5 * time.Second)
	defer cancel()
	var ids []string
	for _, p := range r.live() {
		if !p.Paused() {
			ids = append(ids, p.Name)
		}
	}
	if err := r.obs.WaitCovered(ctx, to, ids...); err != nil {
		r.errorf(window(from, to), "liveness (%s): answers after %s missing: %v", label, invariant.Ms(to), err)
		return
	}
	samples := r.obs.Samples()
	for _, b := range invariant.Blind(samples, from, to, stall) {
		samples = append(samples, invariant.Sample{Who: "(blind)", Answered: true, Leader: true, Send: b.From, Recv: b.To})
	}
	g := invariant.LongestLeaderless(samples, from, to)
	bound := r.bound()
	r.mu.Lock()
	r.res.Bound = max(r.res.Bound, bound)
	r.res.TimeToLeader = max(r.res.TimeToLeader, g.Len())
	r.mu.Unlock()
	r.event("liveness (%s): longest leaderless interval in [%s, %s] is %s (bound %s)", label, invariant.Ms(from), invariant.Ms(to), g, invariant.Ms(bound))
	if g.Len() > bound {
		r.errorf(window(g.From-time.Second, g.To+time.Second), "liveness (%s): no leader for %s, over the bound %s", label, g, invariant.Ms(bound))
	}
}

// finish checks what every run must end with: exactly one leader, the
// traffic through the proxies as traffic.go says, no unexpected exits, no
// orphan nodes, and every participant idle again. The safety check over
// all samples runs in teardown, after the last sample.
func (r *run) finish() {
	r.t.Helper()
	l := r.waitSingleLeader(r.bound())
	r.event("final leader %s", l.Name)
	r.trafficSettles()
	r.checkTraffic()
	r.checkOrphans(r.bound() + 2*time.Second)
	r.checkIdle()
}

// checkOrphans waits up to d for the nodes under the election path to be
// exactly the live participants' (race: one leader node of a live
// participant, owned by the session it reports), then counts what is wrong.
func (r *run) checkOrphans(d time.Duration) {
	r.t.Helper()
	var nodes []invariant.Node
	var orphans []invariant.Node
	var missing []string
	var err error
	var ids []string
	if wait.Until(context.Background(), d, 100*time.Millisecond, func() error {
		ids = ids[:0]
		for _, p := range r.live() {
			ids = append(ids, p.Name)
		}
		if nodes, err = readNodes(r.env.servers(), r.path, 10*time.Second); err != nil {
			return err
		}
		orphans, missing = invariant.Orphans(r.spec.Mode, nodes, ids)
		if len(orphans) == 0 && len(missing) == 0 && r.raceOwnerOK(nodes) {
			return nil
		}
		return errors.New("orphans or missing nodes")
	}) == nil {
		r.event("nodes under %s: %s", r.path, nodesString(nodes))
		return
	}
	r.mu.Lock()
	r.res.Orphans, r.res.Missing = len(orphans), len(missing)
	r.mu.Unlock()
	r.errorf(window(r.now()-d, r.now()), "orphans: %v; after %s, nodes under %s: %s; live participants %v; orphans %s; missing %v",
		err, d, r.path, nodesString(nodes), ids, nodesString(orphans), missing)
}

// raceOwnerOK checks, in race mode, that the leader node's owner is the
// session its participant reports in /leader.
func (r *run) raceOwnerOK(nodes []invariant.Node) bool {
	if r.spec.Mode != "race" {
		return true
	}
	for _, n := range nodes {
		for _, p := range r.live() {
			if n.ID != p.Name {
				continue
			}
			ctx, cancel := r.ctx(2 * time.Second)
			v, err := p.View(ctx)
			cancel()
			return err == nil && v.Leader != nil && electdtest.SessionID(v.Leader.Session) == n.Owner
		}
	}
	return false
}

func nodesString(nodes []invariant.Node) string {
	var parts []string
	for _, n := range nodes {
		parts = append(parts, fmt.Sprintf("%s(id=%s owner=0x%x)", n.Name, n.ID, n.Owner))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// teardown stops everything, runs the safety check over every sample and
// reports the run.
func (r *run) teardown(sum *Summary) {
	r.bg.Wait()
	r.stopTraffic()
	end := r.now()
	r.obs.Stop()
	for _, p := range r.procs {
		if p.Unexpected() {
			r.errorf(window(end-2*time.Second, end), "electd %s exited on its own: %v; log tail:\n%s", p.Name, p.ExitErr(), p.LogTail(30))
		}
	}
	samples := r.obs.Samples()
	// What fails the run is what the samples prove: a claim inside another
	// participant's certain leadership, or two certain stretches that meet
	// (invariant.CertainOverlaps). Two answers whose [send, receive] merely
	// intersect prove nothing on a loaded machine: a leader that answered
	// 200 and then handed over (a term's end) may have its answer delivered
	// after its successor's first one. Those are counted and shown.
	certain := invariant.CertainOverlaps(samples)
	r.res.Certain = len(certain)
	for i, o := range certain {
		if i == 10 {
			r.t.Errorf("... and %d more proven overlaps", len(certain)-10)
			break
		}
		r.errorf(window(o.B.From-500*time.Millisecond, o.B.From+500*time.Millisecond),
			"SAFETY: two participants certainly led at once: %v", o)
	}
	overlaps := invariant.Overlaps(samples)
	r.res.Overlaps = len(overlaps)
	for i, o := range overlaps {
		if i == 3 {
			break
		}
		r.t.Logf("not provable from the samples (answers in flight together): %v", o)
	}
	r.res.Inferred = len(invariant.InferredOverlaps(samples))
	if first, ok := invariant.FirstLeader(samples, 0); ok {
		g := invariant.LongestLeaderless(samples, first.Send, end)
		r.res.Leaderless = g.Len()
		r.t.Logf("longest leaderless interval %s; %d samples, %d proven overlaps, %d pairs of answers in flight together, %d leadership spans that may have met",
			g, len(samples), len(certain), len(overlaps), r.res.Inferred)
	}
	var wg sync.WaitGroup
	for _, p := range r.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.Stop(5 * time.Second)
		}()
	}
	wg.Wait()
	for _, pxs := range r.proxies {
		for _, px := range pxs {
			px.Close()
		}
	}
	if r.res.Failed || r.t.Failed() {
		r.res.Failed = true
		r.report(samples)
	} else if r.alwaysReport {
		r.report(samples)
	}
	r.res.Elapsed = time.Since(r.began)
	sum.Add(r.res)
}

// report prints what happened: the events, the observed answers around each
// problem, and the electd processes' own log lines.
func (r *run) report(samples []invariant.Sample) {
	var b strings.Builder
	fmt.Fprintf(&b, "REPORT %s (election path %s, mode %s, negotiated timeout %s, tick %s)\n"+
		"observer time 0 = %s (the electd logs' clock)\nevents:\n",
		r.t.Name(), r.path, r.spec.modeLabel(), r.timeout, r.env.tick, r.obs.Epoch().UTC().Format(time.RFC3339Nano))
	for _, e := range r.events {
		fmt.Fprintf(&b, "  %10s  %s\n", invariant.Ms(e.at), e.what)
	}
	windows := slices.Clone(r.windows)
	if len(windows) == 0 {
		if first, ok := invariant.FirstLeader(samples, 0); ok {
			g := invariant.LongestLeaderless(samples, first.Send, r.now())
			windows = append(windows, window(g.From-time.Second, g.To+time.Second))
		}
	}
	if len(windows) > 5 {
		windows = windows[:5]
	}
	for _, w := range windows {
		fmt.Fprintf(&b, "answers in %s (status(token)xcount[first send..last receive]):\n%s", w, invariant.Timeline(samples, w))
	}
	for _, p := range r.procs {
		fmt.Fprintf(&b, "log of %s (%s), non-debug lines, last 60:\n", p.Name, p.LogPath)
		var lines []string
		for _, l := range strings.Split(p.LogTail(100000), "\n") {
			if !strings.Contains(l, `"level":"DEBUG"`) {
				lines = append(lines, l)
			}
		}
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		for _, l := range lines {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	r.t.Log(b.String())
}
