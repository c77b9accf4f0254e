package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

var errRefused = errors.New("connection refused")

// healthy is a route probe on k after one attempt got through with nobody
// waiting: everything goes.
func healthy(t *testing.T, c *clocktest.Fake, k routeKey) *routeProbe {
	t.Helper()
	rp := newRouteProbe(c, nil)
	rp.acquire(k, ticket{}).done(true, nil)
	if rp.state != routeHealthy {
		t.Fatalf("state %d after a first attempt got through, want healthy", rp.state)
	}
	return rp
}

// A failing route lets one probe through at a time, after a backoff that
// doubles up to probeMax; the others wait for its outcome, and a probe
// that gets through lets them go.
func TestRouteProbeOneAtATimeWithBackoff(t *testing.T) {
	c := clocktest.NewFake(time.Unix(1000, 0))
	dead := routeKey{to: TargetLeader, addr: "127.0.0.1:1", token: 3}
	rp := healthy(t, c, dead)

	a, b := rp.acquire(dead, ticket{}), rp.acquire(dead, ticket{})
	if !a.ok || !b.ok || a.probe || b.probe {
		t.Fatalf("a healthy route: %+v %+v, want both sent, neither a probe", a, b)
	}
	a.done(false, errRefused)
	b.done(false, errRefused) // sent before the route failed: no extra backoff
	w := rp.acquire(dead, ticket{})
	if w.ok || w.after != probeFirst || !errors.Is(w.err, errRefused) {
		t.Fatalf("after a failure: ok %v, after %v, err %v; want a wait of %v with the failure", w.ok, w.after, w.err, probeFirst)
	}
	want := probeFirst
	for range 8 {
		c.Advance(want)
		p := rp.acquire(dead, ticket{})
		if !p.ok || !p.probe {
			t.Fatalf("after %v: %+v, want the probe", want, p)
		}
		if w = rp.acquire(dead, w); w.ok || w.after != 0 {
			t.Fatalf("while the probe is under way: %+v, want a wait for its outcome", w)
		}
		p.done(false, errRefused)
		if !isClosed(w.changed) {
			t.Fatal("a failed probe did not wake the waiters")
		}
		want = min(2*want, probeMax)
		if w = rp.acquire(dead, w); w.ok || w.after != want {
			t.Fatalf("after a failed probe: %+v, want a wait of %v", w, want)
		}
	}
	if want != probeMax || rp.waiting != 1 {
		t.Fatalf("the backoff reached %v with %d waiting, want %v and 1", want, rp.waiting, probeMax)
	}

	c.Advance(want)
	p := rp.acquire(dead, ticket{})
	p.done(true, nil)
	if !isClosed(w.changed) {
		t.Fatal("a probe that got through did not wake the waiters")
	}
	if w = rp.acquire(dead, w); !w.ok || w.probe || !w.counted || rp.waiting != 0 {
		t.Fatalf("after a probe got through: %+v (%d waiting), want sent at once, in the ramp", w, rp.waiting)
	}
	w.done(true, nil)
	if rp.state != routeHealthy {
		t.Fatalf("state %d once nobody waits, want healthy", rp.state)
	}
}

// A route that comes up while requests wait takes rampFirst at once,
// another whenever one ends, and one more every rampStep, until nobody
// waits.
func TestRouteProbeRamp(t *testing.T) {
	c := clocktest.NewFake(time.Unix(1000, 0))
	rp := newRouteProbe(c, nil)
	k := routeKey{to: TargetApp, token: 7}
	var going, waiting []ticket
	for range 10 {
		if tk := rp.acquire(k, ticket{}); tk.ok {
			going = append(going, tk)
		} else {
			waiting = append(waiting, tk)
		}
	}
	if len(going) != rampFirst || waiting[0].after != rampStep {
		t.Fatalf("%d go at once, the rest wait %v; want %d and %v", len(going), waiting[0].after, rampFirst, rampStep)
	}
	going[0].done(true, nil)
	ok := 0
	for i, w := range waiting {
		if waiting[i] = rp.acquire(k, w); waiting[i].ok {
			ok++
		}
	}
	if ok != 1 {
		t.Fatalf("one ended: %d more go, want 1", ok)
	}
	c.Advance(rampStep)
	ok = 0
	for i, w := range waiting {
		if !w.ok {
			if waiting[i] = rp.acquire(k, w); waiting[i].ok {
				ok++
			}
		}
	}
	if ok != 1 || rp.waiting != 4 {
		t.Fatalf("a step later: %d more go (%d wait), want 1 (4)", ok, rp.waiting)
	}
	for _, w := range waiting {
		w.abandon() // answered elsewhere: the hold time ran out
	}
	going[1].done(true, nil)
	if rp.state != routeHealthy {
		t.Fatalf("state %d once nobody waits, want healthy", rp.state)
	}
}

// Another route (a new leader, another address) starts afresh, and what
// the old one's attempts report later changes nothing.
func TestRouteProbeResetsOnRouteChange(t *testing.T) {
	c := clocktest.NewFake(time.Unix(1000, 0))
	old := routeKey{to: TargetLeader, addr: "127.0.0.1:1", token: 3}
	rp := healthy(t, c, old)
	late := rp.acquire(old, ticket{})
	rp.acquire(old, ticket{}).done(false, errRefused)
	w := rp.acquire(old, ticket{})
	next := routeKey{to: TargetLeader, addr: "127.0.0.1:2", token: 4}
	if n := rp.acquire(next, w); !n.ok || n.probe {
		t.Fatalf("a new route: %+v, want sent at once", n)
	}
	if !isClosed(w.changed) {
		t.Fatal("the route change did not wake those waiting for the old route's probe")
	}
	late.done(false, errRefused)
	if n := rp.acquire(next, ticket{}); !n.ok {
		t.Fatalf("the old route's late failure held the new route: %+v", n)
	}
	// The same address under a new leadership is a new route too.
	rp.acquire(next, ticket{}).done(false, errRefused)
	if n := rp.acquire(routeKey{to: TargetLeader, addr: "127.0.0.1:2", token: 5}, ticket{}); !n.ok {
		t.Fatalf("a new leadership at the same address: %+v, want sent at once", n)
	}
}

// A probe given back unused lets the next waiter probe at once.
func TestRouteProbeAbandoned(t *testing.T) {
	c := clocktest.NewFake(time.Unix(1000, 0))
	k := routeKey{to: TargetApp, token: 1}
	rp := healthy(t, c, k)
	rp.acquire(k, ticket{}).done(false, errRefused)
	c.Advance(probeFirst)
	p := rp.acquire(k, ticket{})
	w := rp.acquire(k, ticket{})
	p.abandon()
	if !isClosed(w.changed) {
		t.Fatal("an abandoned probe did not wake the waiters")
	}
	if n := rp.acquire(k, w); !n.ok || !n.probe || rp.waiting != 0 {
		t.Fatalf("after an abandoned probe: %+v (%d waiting), want the next probe at once", n, rp.waiting)
	}
}

// Issue 40: a route that cannot be reached is said once, with how long
// and how many attempts, at most every outageLogEvery while it lasts, and
// once more when it is reached again or given up for another.
func TestRouteProbeLogsAnOutageOnce(t *testing.T) {
	c := clocktest.NewFake(time.Unix(1000, 0))
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	dead := routeKey{to: TargetLeader, addr: "127.0.0.1:1", token: 3, id: "web-2"}
	rp := newRouteProbe(c, log)
	rp.acquire(dead, ticket{}).done(true, nil)
	lines := func() []string { return strings.Split(strings.TrimSpace(out.String()), "\n") }

	rp.acquire(dead, ticket{}).done(false, errRefused)
	probes := 1
	for range 6 { // within outageLogEvery: no more lines
		c.Advance(probeMax)
		rp.acquire(dead, ticket{}).done(false, errRefused)
		probes++
	}
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], `level=WARN msg="the proxy cannot reach the leader \"web-2\"'s proxy at 127.0.0.1:1`) ||
		!strings.Contains(got[0], "connection refused") {
		t.Fatalf("after %d failed attempts within %v: %q, want one WARN naming the route and the error", probes, outageLogEvery, got)
	}
	c.Advance(outageLogEvery)
	rp.acquire(dead, ticket{}).done(false, errRefused)
	probes++
	if got := lines(); len(got) != 2 || !strings.Contains(got[1], "still cannot reach") ||
		!strings.Contains(got[1], fmt.Sprintf("attempts_since_success=%d", probes)) || !strings.Contains(got[1], "down_for=16s") {
		t.Fatalf("past %v: %q, want a second WARN with attempts_since_success=%d down_for=16s", outageLogEvery, got, probes)
	}
	c.Advance(probeMax)
	rp.acquire(dead, ticket{}).done(true, nil)
	if got := lines(); len(got) != 3 || !strings.Contains(got[2], "level=INFO") || !strings.Contains(got[2], "reaches the leader") ||
		!strings.Contains(got[2], fmt.Sprintf("failed_attempts=%d", probes)) {
		t.Fatalf("once reached: %q, want an INFO with the failed attempts", got)
	}

	// Down again, then given up for a new leader's route.
	rp.acquire(dead, ticket{}).done(false, errRefused)
	next := routeKey{to: TargetLeader, addr: "127.0.0.1:2", token: 9, id: "web-1"}
	rp.acquire(next, ticket{})
	if got := lines(); len(got) != 5 || !strings.Contains(got[4], "stopped trying the leader \\\"web-2\\\"") ||
		!strings.Contains(got[4], "web-1") {
		t.Fatalf("after the route moved: %q, want a line that says where requests go now", got)
	}
}

// A bounce is a view that lags, not an outage: the peer answered. A
// graceful hand-over bounces forwards to the old leader, and must not
// read as a route that cannot be reached.
func TestRouteProbeBounceIsNoOutage(t *testing.T) {
	c := clocktest.NewFake(time.Unix(1000, 0))
	var out bytes.Buffer
	rp := newRouteProbe(c, slog.New(slog.NewTextHandler(&out, nil)))
	old := routeKey{to: TargetLeader, addr: "127.0.0.1:1", token: 3, id: "web-2"}
	rp.acquire(old, ticket{}).done(true, nil)
	rp.acquire(old, ticket{}).done(false, errBounced)
	rp.acquire(routeKey{to: TargetLeader, addr: "127.0.0.1:2", token: 9, id: "web-1"}, ticket{})
	if out.Len() != 0 {
		t.Fatalf("a bounce, then a new leader: %q, want no line", out.String())
	}
}
