package dataplane

import (
	"testing"
	"time"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/invariant"
	"github.com/electd/electd/tests/ledger"
	"github.com/electd/electd/tests/wait"
)

// The settings of TestHungApplication: proxy.response_timeout as a user
// with a fast application sets it, and the data plane's default of
// proxy.app_timeout_stepdown (3 response timeouts in a row, with no answer
// between, make the leader step down) left to apply.
const (
	responseTimeout = time.Second
	stepDownAfter   = 3
	// drainTimeout is proxy.drain_timeout's default with a 5 s hold time:
	// a leader that steps down waits this long at most for what its
	// application has.
	drainTimeout = 2 * time.Second
)

// Issue 28, failure 7: "A hung application never hands leadership on." The
// leader's application accepts connections and never answers (SIGSTOP: the
// kernel still accepts), under GETs through every proxy. Must have 7: the
// leader steps down within stepDownAfter x response_timeout (its timeouts
// counted), plus the drain, plus an election (the liveness bound: what a
// new leader takes to be seen), and the new leader serves. Meanwhile every
// request ends within the hold time + response_timeout + peer_timeout, in
// an answer or a clean 503/504 with Retry-After.
func TestHungApplication(t *testing.T) {
	c := startCluster(t, setup{n: 3, langs: []string{ledger.Go, ledger.Python},
		tune: func(cfg *electdtest.Config) { cfg.ProxyResponseTimeout = responseTimeout }})
	l := c.settled(nil)
	bound := holdTime + responseTimeout + peerTimeout + slack
	ld := ledger.StartLoad(ledger.LoadConfig{Rate: 30, Timeout: bound + 5*time.Second, Prefix: "hung"}, targets(c.members...)...)
	defer ld.Stop()
	wait.For(t, patience, "requests before the application hangs", func() bool { return ld.Count() >= 30 })
	at := time.Now()
	if err := l.app.Proc.Pause(); err != nil {
		t.Fatal(err)
	}
	handOver := stepDownAfter*responseTimeout + drainTimeout + invariant.LivenessBound(sessionTimeout, zookeeper(t).TickTime()) + slack
	t.Logf("%s's %s application stopped answering; a new leader is due within %v", l.name, l.app.Lang, handOver)
	nl := c.settledWithin(l, handOver)
	t.Logf("%s leads %v later", nl.name, time.Since(at).Round(time.Millisecond))
	n := ld.Count()
	wait.For(t, patience, "requests after the new leader", func() bool { return ld.Count() >= n+60 })
	reqs := ld.Stop()
	if err := l.app.Proc.Resume(); err != nil {
		t.Fatal(err)
	}
	report(t, "took longer than the hold time + response_timeout + peer_timeout + slack ("+bound.String()+")", reqs, ledger.Late(reqs, bound))
	report(t, "ended in neither an answer nor a clean 503/504 with Retry-After", reqs, ledger.Failing(reqs, ledger.Clean))
	for _, v := range ledger.Unfenced(c.entries()) {
		t.Errorf("answered by a participant that did not lead: %s", v)
	}
	c.standing(l)
	c.settled(nil)
	c.idle()
}
