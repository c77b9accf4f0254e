package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/electd/electd/internal/clock"
)

// A route that fails is probed by one attempt at a time (docs/design/proxy.md,
// "Retries: a budget, a probe, a ramp"). A dead leader's address refuses
// every dial until ZooKeeper expires its session, seconds later; an
// application that refuses does so until leadership moves. Held
// requests wait for the probe's outcome, or a route change, instead of
// each dialling on its own (linkerd2-proxy and Envoy eject a failing
// endpoint the same way, then let one request through to test it).
//
// A route that comes up (a new leader, a probe that got through) while
// requests wait for it takes them in a ramp, as HAProxy's slowstart: a
// few at once, and one more every rampStep. Released all at once,
// hundreds of held requests would dial at the same instant and overflow
// an accept queue (Python's http.server keeps 5): the kernel drops the
// SYNs it cannot queue, and resends them together a second later. In
// the ramp a request starts when another ends, so the application's
// answers pace the dials; the ramp ends once nobody waits.

// Probe backoff: the first probe follows a failure by probeFirst,
// doubling after each failed probe up to probeMax. One probe per proxy
// at a time, so no jitter is needed to spread a herd: the waiters send
// nothing.
const (
	probeFirst = 25 * time.Millisecond
	probeMax   = time.Second
	// rampFirst attempts may be under way at once when a ramp starts;
	// one more every rampStep.
	rampFirst = 4
	rampStep  = 50 * time.Millisecond
)

// routeKey names a route: where it goes, in which leadership of which
// election. A new leadership (another token), another address, or the
// election's path made anew (the identity a forward names) is a new
// route whose state starts afresh.
type routeKey struct {
	to       Target
	addr     string
	token    int64
	election string
	id       string // the leader's id, for the log: one leadership has one
}

func keyOf(d decision) routeKey {
	if d.way == toApp {
		return routeKey{to: TargetApp, token: d.route.Token, id: d.route.ID}
	}
	return routeKey{to: TargetLeader, addr: d.route.Addr, token: d.route.Token, election: d.route.Election, id: d.route.ID}
}

// String names the route in the log.
func (k routeKey) String() string {
	if k.to == TargetApp {
		return "the application"
	}
	return fmt.Sprintf("the leader %q's proxy at %s (fencing token %d)", k.id, k.addr, k.token)
}

// outageLogEvery is the least time between two lines about one route
// that stays down: a dead leader's address fails every probe until its
// session expires, and an operator needs a line, not one per probe.
const outageLogEvery = 10 * time.Second

// routeState is what a route lets through.
type routeState int8

const (
	routeRamping routeState = iota // a bounded number at once (a new route, or one that came back)
	routeHealthy                   // everything
	routeFailing                   // a probe at a time, after a backoff
)

// routeProbe is the state of the route this proxy sends to. A proxy has
// one route at a time (the application while it leads, else the leader's
// proxy), so it keeps the state of one: another key starts afresh.
type routeProbe struct {
	clock clock.Clock
	log   *slog.Logger

	mu      sync.Mutex
	key     routeKey
	state   routeState
	probing bool          // failing: a probe is under way
	backoff time.Duration // failing: the wait before the next probe
	next    time.Time     // failing: no probe before
	err     error         // failing: the last failure, for the answer at the hold's end
	since   time.Time     // ramping: when the ramp began
	running int           // ramping: attempts under way, counted
	waiting int           // requests that wait for the route
	changed chan struct{} // closed when something may go

	// The outage the log tells of (issue 40: a follower that could not
	// reach the leader's proxy for 10 s said nothing): since when the
	// route fails, the failed attempts since, and the last line's time.
	down     time.Time
	fails    int
	loggedAt time.Time
}

func newRouteProbe(c clock.Clock, log *slog.Logger) *routeProbe {
	return &routeProbe{clock: c, log: log, changed: make(chan struct{})}
}

// ticket is one request's leave to send on a route (ok), or to wait for
// changed (closed when something may go) or after (when not 0). A
// request that waits keeps its ticket for its next acquire, and gives
// its last ticket back with abandon, whatever became of it.
type ticket struct {
	rp      *routeProbe
	key     routeKey
	ok      bool
	probe   bool // this attempt is the route's probe
	counted bool // this attempt counts in the ramp
	waits   bool // counted as waiting
	changed <-chan struct{}
	after   time.Duration
	err     error // the route's last failure, when it waits
}

// acquire asks to send on route k now; prev is the request's ticket
// from before, if any.
func (rp *routeProbe) acquire(k routeKey, prev ticket) ticket {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if k != rp.key {
		rp.startLocked(k, routeRamping)
	}
	t := ticket{rp: rp, key: k, waits: prev.waits && prev.key == k && prev.rp == rp}
	now := rp.clock.Now()
	switch rp.state {
	case routeHealthy:
		t.ok = true
	case routeRamping:
		grown := int(now.Sub(rp.since) / rampStep)
		if rp.running < rampFirst+grown {
			rp.running++
			t.ok, t.counted = true, true
		} else {
			t.after = rampStep - now.Sub(rp.since)%rampStep
		}
	case routeFailing:
		wait := rp.next.Sub(now)
		switch {
		case !rp.probing && wait <= 0:
			rp.probing = true
			t.ok, t.probe = true, true
		case !rp.probing:
			t.after, t.err = wait, rp.err
		default:
			t.err = rp.err
		}
	}
	switch {
	case t.ok && t.waits:
		rp.waiting--
		t.waits = false
	case !t.ok && !t.waits:
		rp.waiting++
		t.waits = true
	}
	t.changed = rp.changed
	return t
}

// done reports how the ticket's attempt went: took (the target took the
// request: a connection was had and it was not bounced or refused) or
// not, with err. A route that takes a request is healthy once nobody
// waits; one that fails becomes failing, and a failed probe doubles the
// backoff.
func (t ticket) done(took bool, err error) {
	rp := t.rp
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if t.key != rp.key {
		return // the route changed meanwhile: that state is gone
	}
	rp.giveBackLocked(t)
	if !took && !errors.Is(err, errBounced) {
		// A bounce is a view that lags (a hand-over, a path made anew),
		// not a route that cannot be reached: the peer answered.
		defer rp.failedLocked(err)
	}
	switch {
	case took && rp.state == routeFailing:
		rp.state, rp.probing, rp.since, rp.running = routeRamping, false, rp.clock.Now(), 0
		rp.recoveredLocked()
		rp.notifyLocked()
	case took && rp.state == routeRamping && rp.waiting == 0:
		rp.state, rp.backoff = routeHealthy, 0
		rp.notifyLocked()
	case took:
	case rp.state != routeFailing:
		rp.state, rp.probing, rp.backoff = routeFailing, false, max(rp.backoff, probeFirst)
		rp.failLocked(err)
	case t.probe:
		rp.backoff = min(2*rp.backoff, probeMax)
		rp.failLocked(err)
	}
	// Else an attempt sent before the route failed: the probe paces.
}

// abandon gives the ticket back: unused (the request was answered or went
// away before its attempt), or after a wait.
func (t ticket) abandon() {
	if !t.probe && !t.counted && !t.waits {
		return
	}
	rp := t.rp
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if t.key == rp.key {
		rp.giveBackLocked(t)
	}
}

// giveBackLocked undoes what t counts.
func (rp *routeProbe) giveBackLocked(t ticket) {
	switch {
	case t.probe && rp.state == routeFailing:
		rp.probing = false
		rp.notifyLocked() // the next probe may start at once
	case t.counted && rp.state == routeRamping:
		rp.running--
		rp.notifyLocked() // another may go
	}
	if t.waits {
		rp.waiting--
	}
}

func (rp *routeProbe) failLocked(err error) {
	rp.err = err
	rp.next = rp.clock.Now().Add(rp.backoff)
	rp.notifyLocked()
}

// failedLocked counts a failed attempt of the route's outage and says so:
// at its first, then at most every outageLogEvery.
func (rp *routeProbe) failedLocked(err error) {
	now := rp.clock.Now()
	rp.fails++
	switch {
	case rp.down.IsZero():
		rp.down, rp.fails, rp.loggedAt = now, 1, now
		rp.logf(slog.LevelWarn, "the proxy cannot reach "+rp.key.String()+"; requests wait for it within the hold time",
			"err", err)
	case now.Sub(rp.loggedAt) >= outageLogEvery:
		rp.loggedAt = now
		rp.logf(slog.LevelWarn, "the proxy still cannot reach "+rp.key.String(), "err", err,
			"attempts_since_success", rp.fails, "down_for", now.Sub(rp.down).Round(time.Millisecond))
	}
}

// recoveredLocked ends the route's outage, if it had one, and says so.
func (rp *routeProbe) recoveredLocked() {
	if rp.down.IsZero() {
		return
	}
	rp.logf(slog.LevelInfo, "the proxy reaches "+rp.key.String()+" again",
		"failed_attempts", rp.fails, "down_for", rp.clock.Now().Sub(rp.down).Round(time.Millisecond))
	rp.down, rp.fails = time.Time{}, 0
}

// logf logs under rp.mu: the proxy's logger never blocks (a full stderr
// drops lines), and the lines of one route keep their order.
func (rp *routeProbe) logf(level slog.Level, msg string, args ...any) {
	if rp.log != nil {
		rp.log.Log(context.Background(), level, msg, args...)
	}
}

// startLocked makes k the route, in state s. An outage of the route
// before ends with it: the log says how long it lasted and where the
// requests go now.
func (rp *routeProbe) startLocked(k routeKey, s routeState) {
	if !rp.down.IsZero() {
		rp.logf(slog.LevelInfo, "the proxy stopped trying "+rp.key.String()+": requests go to "+k.String()+" now",
			"failed_attempts", rp.fails, "down_for", rp.clock.Now().Sub(rp.down).Round(time.Millisecond))
		rp.down, rp.fails = time.Time{}, 0
	}
	rp.key, rp.state, rp.probing, rp.backoff, rp.next, rp.err = k, s, false, 0, time.Time{}, nil
	rp.since, rp.running, rp.waiting = rp.clock.Now(), 0, 0
	rp.notifyLocked()
}

func (rp *routeProbe) notifyLocked() {
	close(rp.changed)
	rp.changed = make(chan struct{})
}
