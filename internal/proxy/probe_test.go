package proxy

import (
	"errors"
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

// A failing route lets one probe through at a time, after a backoff that
// doubles up to probeMax; the others wait for its outcome, and a probe
// that gets through releases them all.
func TestRouteProbeOneAtATimeWithBackoff(t *testing.T) {
	c := clocktest.NewFake(time.Unix(1000, 0))
	rp := newRouteProbe(c)
	dead := routeKey{to: TargetLeader, addr: "127.0.0.1:1", token: 3}
	refused := errors.New("connection refused")

	a, b := rp.acquire(dead), rp.acquire(dead)
	if !a.ok || !b.ok || a.probe || b.probe {
		t.Fatalf("a healthy route: %+v %+v, want both sent, neither a probe", a, b)
	}
	a.done(false, refused)
	b.done(false, refused) // sent before the route failed: no extra backoff
	w := rp.acquire(dead)
	if w.ok || w.after != probeFirst || !errors.Is(w.err, refused) {
		t.Fatalf("after a failure: ok %v, after %v, err %v; want a wait of %v with the failure", w.ok, w.after, w.err, probeFirst)
	}
	want := probeFirst
	for range 8 {
		c.Advance(want)
		p := rp.acquire(dead)
		if !p.ok || !p.probe {
			t.Fatalf("after %v: %+v, want the probe", want, p)
		}
		if o := rp.acquire(dead); o.ok || o.after != 0 {
			t.Fatalf("while the probe is under way: %+v, want a wait for its outcome", o)
		}
		ch := rp.acquire(dead).changed
		p.done(false, refused)
		if !isClosed(ch) {
			t.Fatal("a failed probe did not wake the waiters")
		}
		want = min(2*want, probeMax)
		if o := rp.acquire(dead); o.ok || o.after != want {
			t.Fatalf("after a failed probe: %+v, want a wait of %v", o, want)
		}
	}
	if want != probeMax {
		t.Fatalf("the backoff reached %v, want %v", want, probeMax)
	}

	c.Advance(want)
	p := rp.acquire(dead)
	ch := rp.acquire(dead).changed
	p.done(true, nil)
	if !isClosed(ch) {
		t.Fatal("a probe that got through did not release the waiters")
	}
	if o := rp.acquire(dead); !o.ok || o.probe {
		t.Fatalf("after a probe got through: %+v, want sent at once", o)
	}
}

// Another route (a new leader, another address) starts afresh, and what
// the old one's attempts report later changes nothing.
func TestRouteProbeResetsOnRouteChange(t *testing.T) {
	c := clocktest.NewFake(time.Unix(1000, 0))
	rp := newRouteProbe(c)
	old := routeKey{to: TargetLeader, addr: "127.0.0.1:1", token: 3}
	late := rp.acquire(old)
	first := rp.acquire(old)
	first.done(false, errors.New("refused"))
	ch := rp.acquire(old).changed
	next := routeKey{to: TargetLeader, addr: "127.0.0.1:2", token: 4}
	if n := rp.acquire(next); !n.ok || n.probe {
		t.Fatalf("a new route: %+v, want sent at once", n)
	}
	if !isClosed(ch) {
		t.Fatal("the route change did not wake those waiting for the old route's probe")
	}
	late.done(false, errors.New("refused"))
	if n := rp.acquire(next); !n.ok {
		t.Fatalf("the old route's late failure held the new route: %+v", n)
	}
	// The same address under a new leadership is a new route too.
	rp.acquire(next).done(false, errors.New("refused"))
	if n := rp.acquire(routeKey{to: TargetLeader, addr: "127.0.0.1:2", token: 5}); !n.ok {
		t.Fatalf("a new leadership at the same address: %+v, want sent at once", n)
	}
}

// A probe given back unused lets the next waiter probe at once.
func TestRouteProbeAbandoned(t *testing.T) {
	c := clocktest.NewFake(time.Unix(1000, 0))
	rp := newRouteProbe(c)
	k := routeKey{to: TargetApp, token: 1}
	rp.acquire(k).done(false, errors.New("refused"))
	c.Advance(probeFirst)
	p := rp.acquire(k)
	ch := rp.acquire(k).changed
	p.abandon()
	if !isClosed(ch) {
		t.Fatal("an abandoned probe did not wake the waiters")
	}
	if n := rp.acquire(k); !n.ok || !n.probe {
		t.Fatalf("after an abandoned probe: %+v, want the next probe at once", n)
	}
}
