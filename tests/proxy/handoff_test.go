package proxy

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/proxy"
	"github.com/electd/electd/tests/harness/proxykit"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// TestZKHandoffsFailNoRequest runs four participants, each an elector
// with a proxy in front of its application, and sends a few hundred
// requests a second through all their proxies while leadership moves:
// released; handed over before the leader's application stops (a pod
// deletion whose application asks electd to hand over first); lost
// because the leader's application stops taking connections on its own
// (the pod deletion electd cannot see coming: the application stops
// before its electd); and handed over by a leader that shuts down. Every
// request is answered within the hold time, and by the application whose
// elector led at that moment, with its fencing token (checked by the
// applications, at arrival, against their electors and a fence that
// refuses a token lower than one seen); none runs twice (the applications'
// ledger of request ids). With proxy.resend_unread_body (this application
// reads every body before it acts) none fails. By default (at most once),
// an application that stops on its own drops the POSTs it read after its
// shutdown began, which electd cannot prove unprocessed: those, and only
// those, get a clean answer saying they may or may not have been
// processed; every other step fails nothing.
func TestZKHandoffsFailNoRequest(t *testing.T) {
	for _, resend := range []bool{true, false} {
		t.Run(fmt.Sprintf("resend_unread_body %v", resend), func(t *testing.T) { handoffs(t, resend) })
	}
}

func handoffs(t *testing.T, resend bool) {
	ens := zktest.Start(t, zktest.Options{})
	f := &fence{}
	var ms []*inprocMember
	for i := range 4 {
		m := startMember(t, ens, "/proxy/handoffs", fmt.Sprintf("p%d", i), f, resend)
		ms = append(ms, m)
		wait.For(t, inprocPatience, m.name+" to join", func() bool { return m.el.Status().Joined })
	}
	targets := proxykit.NewPool()
	for _, m := range ms {
		targets.Add(m.name, m.addr)
	}
	live := slices.Clone(ms) // the members still serving
	// leader waits for a leader other than old that every proxy routes to.
	leader := func(old *inprocMember) *inprocMember {
		var l *inprocMember
		wait.For(t, inprocPatience, "one new leader that every proxy routes to", func() bool {
			l = nil
			for _, m := range live {
				if m.leads() {
					l = m
				}
			}
			if l == nil || l == old {
				return false
			}
			for _, m := range live {
				if st := m.px.State(); m != l && st.To != l.peer {
					return false
				}
			}
			return true
		})
		return l
	}
	stopApp := func(l *inprocMember) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return l.app.Config.Shutdown(ctx) // stops listening, closes idle connections, finishes what it has
	}

	for _, step := range []struct {
		name string
		do   func(l *inprocMember) error
		// unproven: POSTs may end "may or may not have been processed".
		unproven bool
	}{
		{name: "release", do: func(l *inprocMember) error { return l.release() }},
		{name: "hand-over, then the application stops", do: func(l *inprocMember) error {
			if err := l.handOver(); err != nil {
				return err
			}
			return stopApp(l)
		}},
		{name: "the application stops first", do: stopApp, unproven: !resend},
		{name: "leader shuts down", do: func(l *inprocMember) error {
			err := l.shutDown(t, targets, live)
			live = slices.DeleteFunc(live, func(o *inprocMember) bool { return o == l })
			return err
		}},
	} {
		l := leader(nil)
		// A few hundred requests a second: 6 workers, one request every 15 ms each.
		ld := proxykit.StartLoad(targets, proxykit.LoadConfig{Workers: 6, Pace: 15 * time.Millisecond, Max: 2000, Timeout: 15 * time.Second})
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		if err := step.do(l); err != nil {
			t.Fatalf("%s of %s: %v", step.name, l.name, err)
		}
		nl := leader(l)
		took := time.Since(start)
		time.Sleep(300 * time.Millisecond)
		wait.For(t, inprocPatience, "200 requests through this step", func() bool { return ld.Count() >= 200 })
		results := ld.Stop()
		judge(t, step.name, results, step.unproven)
		t.Logf("%s: %s -> %s in %v; %d requests, slowest %v",
			step.name, l.name, nl.name, took.Round(time.Millisecond), len(results), proxykit.Slowest(results).Round(time.Millisecond))
	}
	if p := f.problems(); len(p) > 0 {
		t.Fatalf("%d fencing violations, first: %s", len(p), p[0])
	}
}

// judge fails the test for any request that failed or took longer than
// the hold time; with unproven, but for POSTs answered 502 or 503 saying
// they may or may not have been processed.
func judge(t *testing.T, step string, results []proxykit.Result, unproven bool) {
	t.Helper()
	if len(results) < 200 {
		t.Fatalf("%s: only %d requests were sent", step, len(results))
	}
	var failed []string
	maybe := 0
	for _, r := range results {
		switch {
		case unproven && r.Post && (r.Code == http.StatusBadGateway || r.Code == http.StatusServiceUnavailable) &&
			strings.Contains(r.Body, "may or may not have been processed"):
			maybe++
		case !r.OK():
			failed = append(failed, r.String())
		case r.Latency() > proxy.DefaultHoldTime:
			failed = append(failed, fmt.Sprintf("answered past the hold time: %v", r))
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%s: %d of %d requests failed; first: %s", step, len(failed), len(results), failed[0])
	}
	if maybe > 0 {
		t.Logf("%s: %d POSTs answered that they may or may not have been processed", step, maybe)
	}
}
