package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/ledger"
	"github.com/electd/electd/tests/harness/wait"
)

// Issue 28, failure 1: "A stalled leader hangs requests for a minute." The
// leader's electd is stopped (SIGSTOP: a VM pause, a lost node, peers cut
// off from it) while its application keeps running, under about 100 GETs
// and 10 POSTs a second through both followers. Must have 1: every request
// ends within the hold time, plus the application's time (nothing here
// sleeps), plus proxy.peer_timeout (how long a peer that stopped answering
// is believed), in an answer or a clean 503/504 with Retry-After; what was
// forwarded to the stalled leader is sent to the new one when it provably
// reached no application or is safe to repeat, and ends as "may or may not
// have been processed" otherwise; so is what it had begun to answer (its
// headers sent, its body not), since a follower's proxy relays a small
// answer whole or not at all. A GET that failed is not a defect by
// itself: the held requests are released at once on the new leader, where
// they wait for one of proxy.app_max_in_flight places, within the hold
// time. Must have 2: no POST runs
// twice. No request is answered by a participant that did not lead, but
// what the stopped leader took before the stop and writes to its
// application once it goes on, with its old fencing token (a fenced
// storage refuses it; its client has its 503 already): those are counted.
// After SIGCONT the stopped participant is back at its idle footprint.
func TestStalledLeader(t *testing.T) {
	// proxy.app_max_in_flight keeps the burst of held requests released on
	// the new leader out of a Python http.server's accept queue: with 5 at
	// most at the application, accepted or not, its queue of 5 never
	// overflows. Past it, its kernel drops connection attempts (retried
	// after a second, past the bound under load) and resets connections it
	// never accepted (502: the proxy cannot tell that from an application
	// that died with the request). What the application cannot take within
	// the hold time gets 503 (app_busy).
	c := startCluster(t, setup{n: 3, langs: []string{ledger.Go, ledger.Python},
		tune: func(cfg *electdtest.Config) { cfg.ProxyAppMaxInFlight = 5 }})
	l := c.settled(nil)
	bound := holdTime + peerTimeout + slack
	ld := ledger.StartLoad(ledger.LoadConfig{Rate: 110, PostEvery: 11, Timeout: bound + 5*time.Second, Prefix: "stall"},
		targets(c.others(l)...)...)
	defer ld.Stop()
	wait.For(t, patience, "requests before the stall", func() bool { return ld.Count() >= 100 })
	at := time.Now()
	if err := l.proc.Pause(); err != nil {
		t.Fatal(err)
	}
	nl := c.settled(l)
	moved := time.Since(at)
	// The load goes on through the new leader for a while, then every
	// request still out is waited for (each within the client's patience)
	// while the old leader is still stopped.
	n := ld.Count()
	wait.For(t, patience, "requests after the new leader", func() bool { return ld.Count() >= n+200 })
	reqs := ld.Stop()
	if err := l.proc.Resume(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s stopped; %s leads and every proxy routes to it %v later; %d requests (%d POSTs): %s",
		l.name, nl.name, moved.Round(time.Millisecond), len(reqs), len(ledger.Posts(reqs)), ledger.Codes(reqs))

	report(t, "took longer than the hold time + peer_timeout + slack ("+bound.String()+")", reqs, ledger.Late(reqs, bound))
	report(t, "ended in neither an answer nor a clean 503/504 with Retry-After", reqs, ledger.Failing(reqs, ledger.Clean))
	es := c.entries()
	posts := ledger.Posts(reqs)
	for _, v := range ledger.Twice(es, func(id string) bool { return posts[id] }) {
		t.Errorf("a POST ran twice: %s", v)
	}
	stale, unfenced := ledger.UnfencedStale(es)
	for _, v := range stale {
		if !strings.HasPrefix(v, l.name+" ") {
			unfenced = append(unfenced, v)
		}
	}
	if len(stale) > 0 {
		t.Logf("requests the stopped leader wrote to its application once it went on, with its old token (a fenced storage refuses them): %d", len(stale))
	}
	for _, v := range unfenced {
		t.Errorf("answered by a participant that did not lead: %s", v)
	}
	for _, v := range ledger.Leaks(reqs) {
		t.Errorf("an Electd-* header reached a client: %s", v)
	}
	c.settled(nil)
	c.idle()
}

func ok200(r ledger.Request) bool { return r.Err == nil && r.Code == 200 }
