package proxy

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electd/electd/internal/clock"
)

var (
	// errStalled: a body or a write made no progress for BodyTimeout.
	errStalled = errors.New("proxy: no progress within the body timeout")
	// errIdle: a spliced or upgraded connection carried nothing for IdleTimeout.
	errIdle = errors.New("proxy: idle past the idle timeout")
)

// guard bounds how long a flow of bytes may stall (docs/design/proxy-app.md,
// "Forwarding": bounds). A slot is active while bytes are
// due on it (a body not yet at its end, a write in progress) and holds the
// time of its last progress; trip is called once when an active slot made
// no progress for stall, or when nothing at all happened for idle (0: no
// idle limit). One timer per guard, moved forward as it finds progress:
// reads and writes only store a time.
type guard struct {
	clock clock.Clock
	stall time.Duration
	idle  time.Duration
	trip  func(error)

	last  atomic.Int64    // unix nanoseconds of the last progress
	slots [2]atomic.Int64 // 0: inactive, else the slot's last progress

	mu      sync.Mutex
	timer   clock.Timer
	stopped bool
}

func newGuard(c clock.Clock, stall, idle time.Duration, trip func(error)) *guard {
	g := &guard{clock: c, stall: stall, idle: idle, trip: trip}
	g.last.Store(g.now())
	g.arm(min(stall, nonZero(idle, stall)))
	return g
}

func nonZero(d, or time.Duration) time.Duration {
	if d == 0 {
		return or
	}
	return d
}

func (g *guard) now() int64 { return g.clock.Now().UnixNano() }

// progress marks slot i active, with progress now.
func (g *guard) progress(i int) {
	t := g.now()
	g.slots[i].Store(t)
	g.last.Store(t)
}

// done marks slot i inactive: nothing is due on it.
func (g *guard) done(i int) {
	g.slots[i].Store(0)
	g.last.Store(g.now())
}

// touch records activity that leaves no slot active (a read completed).
func (g *guard) touch() { g.last.Store(g.now()) }

// stop ends the guard; trip is not called after it returns.
func (g *guard) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	if g.timer != nil {
		g.timer.Stop()
	}
}

func (g *guard) arm(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.stopped {
		g.timer = g.clock.AfterFunc(d, g.check)
	}
}

// check trips or re-arms for the earliest moment it could trip.
func (g *guard) check() {
	now := g.now()
	next := g.stall
	for i := range g.slots {
		s := g.slots[i].Load()
		if s == 0 {
			continue
		}
		left := time.Duration(s + int64(g.stall) - now)
		if left <= 0 {
			g.fire(errStalled)
			return
		}
		next = min(next, left)
	}
	if g.idle > 0 {
		left := time.Duration(g.last.Load() + int64(g.idle) - now)
		if left <= 0 {
			g.fire(errIdle)
			return
		}
		next = min(next, left)
	}
	g.arm(next)
}

func (g *guard) fire(err error) {
	g.mu.Lock()
	stopped := g.stopped
	g.stopped = true
	g.mu.Unlock()
	if !stopped {
		g.trip(err)
	}
}
