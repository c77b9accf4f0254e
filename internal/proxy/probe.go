package proxy

import (
	"sync"
	"time"

	"github.com/electd/electd/internal/clock"
)

// A route that fails is probed by one attempt at a time (docs/DESIGN.md,
// "Forwarding": retries). A dead leader's address refuses every dial
// until ZooKeeper expires its session, seconds later; an application
// that refuses does so until leadership moves. Held requests wait for
// the probe's outcome, or a route change, instead of each dialling on
// its own (linkerd2-proxy and Envoy eject a failing endpoint the same
// way, then let one request through to test it).

// Probe backoff: the first probe follows a failure by probeFirst,
// doubling after each failed probe up to probeMax. One probe per proxy
// at a time, so no jitter is needed to spread a herd: the waiters send
// nothing.
const (
	probeFirst = 25 * time.Millisecond
	probeMax   = time.Second
)

// routeKey names a route: where it goes, in which leadership. A new
// leadership (another token), or another address, is a new route whose
// state starts afresh.
type routeKey struct {
	to    Target
	addr  string
	token int64
}

func keyOf(d decision) routeKey {
	if d.way == toApp {
		return routeKey{to: TargetApp, token: d.route.Token}
	}
	return routeKey{to: TargetLeader, addr: d.route.Addr, token: d.route.Token}
}

// routeProbe is the state of the route this proxy sends to: healthy, or
// failing with a backoff. A proxy has one route at a time (the
// application while it leads, else the leader's proxy), so it keeps the
// state of one: another key resets it.
type routeProbe struct {
	clock clock.Clock

	mu      sync.Mutex
	key     routeKey
	failing bool
	probing bool          // a probe is under way
	backoff time.Duration // the wait before the next probe after a failed one
	next    time.Time     // no probe before
	err     error         // the last failure, for the answer at the hold's end
	changed chan struct{} // closed when the state changes
}

func newRouteProbe(c clock.Clock) *routeProbe {
	return &routeProbe{clock: c, changed: make(chan struct{})}
}

// ticket is one request's leave to send on a route: go, or wait for
// changed (closed at the next state change) or after (when a probe may
// start; 0 while one is under way).
type ticket struct {
	rp      *routeProbe
	key     routeKey
	ok      bool
	probe   bool // this attempt is the route's probe
	changed <-chan struct{}
	after   time.Duration
	err     error // the route's last failure, when it waits
}

// acquire asks to send on route k now.
func (rp *routeProbe) acquire(k routeKey) ticket {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if k != rp.key {
		rp.resetLocked(k)
	}
	t := ticket{rp: rp, key: k}
	if !rp.failing {
		t.ok = true
		return t
	}
	wait := rp.next.Sub(rp.clock.Now())
	if !rp.probing && wait <= 0 {
		rp.probing = true
		t.ok, t.probe = true, true
		return t
	}
	t.changed, t.err = rp.changed, rp.err
	if !rp.probing {
		t.after = wait
	}
	return t
}

// done reports how the ticket's attempt went: took (the target took the
// request: a connection was had and it was not bounced or refused) or
// not, with err. A route that takes a request is healthy again; one
// that fails becomes failing, and a failed probe doubles the backoff.
func (t ticket) done(took bool, err error) {
	rp := t.rp
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if t.key != rp.key {
		return // the route changed meanwhile: that state is gone
	}
	if t.probe {
		rp.probing = false
	}
	switch {
	case took:
		if rp.failing {
			rp.resetLocked(rp.key)
		}
		return
	case !rp.failing:
		rp.failing, rp.backoff = true, probeFirst
	case t.probe:
		rp.backoff = min(2*rp.backoff, probeMax)
	default:
		return // an attempt sent before the route failed: the probe paces
	}
	rp.err = err
	rp.next = rp.clock.Now().Add(rp.backoff)
	rp.notifyLocked()
}

// abandon gives the ticket back unused (the request was answered or went
// away before its attempt): a probe it held may start at once elsewhere.
func (t ticket) abandon() {
	if !t.probe {
		return
	}
	rp := t.rp
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if t.key == rp.key {
		rp.probing = false
		rp.notifyLocked()
	}
}

func (rp *routeProbe) resetLocked(k routeKey) {
	rp.key, rp.failing, rp.probing, rp.backoff, rp.next, rp.err = k, false, false, 0, time.Time{}, nil
	rp.notifyLocked()
}

func (rp *routeProbe) notifyLocked() {
	close(rp.changed)
	rp.changed = make(chan struct{})
}
