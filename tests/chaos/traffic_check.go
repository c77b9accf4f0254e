package chaos

import (
	"fmt"
	"strings"
	"time"

	"github.com/electd/electd/tests/harness/ledger"
)

// settleTraffic is how long the load goes on once a run has its final
// leader: what the fault left held or half-routed ends meanwhile, and the
// new leader serves for a while.
const settleTraffic = 2 * time.Second

// trafficSettles lets the load run settleTraffic longer.
func (r *run) trafficSettles() {
	r.mu.Lock()
	ld := r.load
	r.mu.Unlock()
	if ld != nil {
		r.holdUntil(r.now() + settleTraffic)
	}
}

// checkTraffic stops the load and judges every request of the run (see
// traffic.go), from the answers and the applications' ledgers.
func (r *run) checkTraffic() {
	r.t.Helper()
	r.mu.Lock()
	ld := r.load
	var paths []string
	for _, pt := range r.parts {
		paths = append(paths, pt.app.Ledger)
	}
	r.mu.Unlock()
	if ld == nil {
		return
	}
	reqs := ld.Stop()
	entries, err := ledger.Read(paths...)
	if err != nil {
		r.fatalf("ledgers: %v", err)
	}
	posts := ledger.Posts(reqs)
	twice := ledger.Twice(entries, func(id string) bool { return posts[id] })
	unfenced := ledger.Unfenced(entries)
	bound := trafficBound
	var late, unclean []ledger.Request
	excused := 0
	for _, q := range reqs {
		if r.excused(q) {
			excused++
			continue
		}
		if q.Latency() > bound {
			late = append(late, q)
		}
		if !ledger.Clean(q) && !ledger.SaysMaybe(q) {
			unclean = append(unclean, q)
		}
	}
	leaks := ledger.Leaks(reqs)
	r.mu.Lock()
	r.res.Requests, r.res.Twice, r.res.Late, r.res.Unclean = len(reqs), len(twice)+len(unfenced), len(late), len(unclean)+len(leaks)
	r.mu.Unlock()
	r.event("traffic: %d requests (%d POSTs), %d answered 200, %d through a participant stopped while they were out (not judged); "+
		"%d POSTs ran twice, %d unfenced, %d over %s, %d unclean, %d with Electd-* headers",
		len(reqs), len(posts), ledger.Count(reqs, func(q ledger.Request) bool { return q.Err == nil && q.Code == 200 }),
		excused, len(twice), len(unfenced), len(late), bound, len(unclean), len(leaks))
	r.trafficErrors("POSTs ran twice", twice)
	r.trafficErrors("requests reached an application whose participant did not lead", unfenced)
	r.trafficErrors(fmt.Sprintf("requests took longer than the hold time + peer_timeout + the application's time + %s (%s)", trafficSlack, bound), strs(late))
	r.trafficErrors("requests ended in neither an answer, a clean 503/504 with Retry-After, nor a 502/503 that says \""+
		ledger.MaybeProcessed+"\"", strs(unclean))
	r.trafficErrors("answers showed the client an Electd-* header", leaks)
}

// excused reports a request through a participant that was taken out
// (stopped, paused, killed) while the request was on its way.
func (r *run) excused(q ledger.Request) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.gone[q.Via] {
		// Taken out just before the signal: a request that picked it then
		// may still have been dialling.
		if !at.Before(q.Start.Add(-time.Second)) && !at.After(q.End) {
			return true
		}
	}
	return false
}

// trafficErrors fails the run with the first few of what, if any.
func (r *run) trafficErrors(what string, lines []string) {
	r.t.Helper()
	if len(lines) == 0 {
		return
	}
	show := lines[:min(len(lines), 5)]
	r.errorf(window(r.now()-30*time.Second, r.now()), "traffic: %d %s:\n  %s", len(lines), what, strings.Join(show, "\n  "))
}

func strs(reqs []ledger.Request) []string {
	var out []string
	for _, q := range reqs {
		out = append(out, q.String())
	}
	return out
}
