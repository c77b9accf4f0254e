package proxy

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/ledger"
	"github.com/electd/electd/tests/harness/wait"
)

// The settings of TestHungApplication and TestSlowClientsKeepLeadership:
// proxy.response_timeout as a user with a fast application sets it, and
// the data plane's default of proxy.app_timeout_stepdown left to apply: an
// answer timeout starts the proxy's own checks of the application (HEAD /
// on a new connection, each within the response timeout, at most 5 s), and
// 3 failed in a row, with no answer between, make the leader step down.
const (
	responseTimeout = time.Second
	stepDownAfter   = 3
	checkTimeout    = responseTimeout // min(5s, proxy.response_timeout)
	// drainTimeout is proxy.drain_timeout's default with a 5 s hold time:
	// a leader that steps down waits this long at most for what its
	// application has.
	drainTimeout = 2 * time.Second
)

// Issue 28, failure 7: "A hung application never hands leadership on." The
// leader's application accepts connections and never answers (SIGSTOP: the
// kernel still accepts), under GETs through every proxy. Must have 7: the
// leader steps down within a response_timeout and stepDownAfter checks
// (issue 37, must-have 5), plus the drain, plus an election (the liveness
// bound: what a new leader takes to be seen), and the new leader serves. Meanwhile every
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
	handOver := responseTimeout + stepDownAfter*checkTimeout + drainTimeout + invariant.LivenessBound(sessionTimeout, zookeeper(t).TickTime()) + slack
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
	// Once continued, the stopped application reads what the proxy wrote
	// to it before giving it up (the kernel had accepted it): requests with
	// the old token, after the new leader's. A fenced storage refuses those,
	// which is what the token is for; what the proxy promises is that no
	// client got its answer from a participant that no longer led.
	// The proxy's checks answer no client either.
	given := map[string]bool{}
	for _, r := range reqs {
		if !ok200(r) {
			given[r.ID] = true
		}
	}
	var answered []ledger.Entry
	for _, e := range c.entries() {
		if !given[e.ID] && !isCheck(e) {
			answered = append(answered, e)
		}
	}
	for _, v := range ledger.Unfenced(answered) {
		t.Errorf("answered by a participant that did not lead: %s", v)
	}
	c.standing(l)
	c.settled(nil)
	c.idle()
}

// isCheck reports the arrival of a request the leader's proxy sent to
// check its application.
func isCheck(e ledger.Entry) bool {
	return slices.Contains(e.Header["user-agent"], "electd-proxy-check")
}

// checks counts the checks that arrived at an application, and those it
// answered (by their request ids: a check carries one of its own).
func checks(es []ledger.Entry) (arrived, answered int) {
	ids := map[string]bool{}
	for _, e := range es {
		if e.Ev == ledger.Arrive && isCheck(e) {
			arrived++
			ids[e.ID] = true
		}
	}
	for _, e := range es {
		if e.Ev == ledger.Done && ids[e.ID] {
			answered++
		}
	}
	return arrived, answered
}

// Issue 37, item 7: "Any client can move leadership." Three clients ask
// at once for a path slower than proxy.response_timeout, through the
// leader and through a follower, round after round. Must have 5: each gets
// its 504 with Retry-After, the proxy's own check finds the application
// answering, and the leader stays the leader; nothing steps down.
func TestSlowClientsKeepLeadership(t *testing.T) {
	c := startCluster(t, setup{n: 3, langs: []string{ledger.Python, ledger.Go},
		tune: func(cfg *electdtest.Config) { cfg.ProxyResponseTimeout = responseTimeout }})
	l := c.settled(nil)
	slowPath := fmt.Sprintf("/slow?sleep=%d", (3 * responseTimeout).Milliseconds())
	client := ledger.Client(patience)
	defer client.CloseIdleConnections()
	const rounds = 3
	for round := range rounds {
		var wg sync.WaitGroup
		reqs := make([]ledger.Request, 3)
		for i, m := range []*member{l, c.others(l)[0], l} {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodGet, "http://"+m.proxy+slowPath, nil)
				reqs[i] = ledger.Do(client, m.name, fmt.Sprintf("slow-%d-%d", round, i), req)
			})
		}
		wg.Wait()
		report(t, "did not end in a 504 with Retry-After", reqs, ledger.Failing(reqs, func(r ledger.Request) bool {
			return r.Err == nil && r.Code == http.StatusGatewayTimeout && r.Header.Get("Retry-After") != ""
		}))
		// The round's check has passed (or is under way) once a client is
		// answered straight after: the leader still leads.
		if nl := c.settled(nil); nl != l {
			t.Fatalf("round %d: %s leads, not %s: slow requests moved leadership", round, nl.name, l.name)
		}
	}
	// One check per round (rounds are more than a check timeout apart),
	// each answered: none runs now, so none can step down later.
	wait.For(t, patience, fmt.Sprintf("%d answered checks of %s's application", rounds, l.name), func() bool {
		arrived, answered := checks(c.entries())
		return arrived >= rounds && answered == arrived
	})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	mfs, err := l.proc.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := electdtest.Value(mfs, "electd_proxy_step_downs_total"); err != nil || n != 0 {
		t.Fatalf("%s stepped down %v times (%v), want never", l.name, n, err)
	}
	if nl := c.settled(nil); nl != l {
		t.Fatalf("%s leads, not %s", nl.name, l.name)
	}
	c.idle()
}
