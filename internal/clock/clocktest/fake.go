// Package clocktest has the one fake clock.Clock of electd's tests.
package clocktest

import (
	"sort"
	"sync"
	"time"

	"github.com/electd/electd/internal/clock"
)

// Fake is a clock that moves only when told. Advance runs the timers that
// fall due, in order. Each runs in its own goroutine, as with
// time.AfterFunc.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

var _ clock.Clock = (*Fake)(nil)

type timer struct {
	c    *Fake
	at   time.Time
	f    func()
	done bool
}

// NewFake returns a Fake that reads start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc runs f once the clock has been advanced by d.
func (c *Fake) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// After returns a channel that receives the fake time once the clock has
// been advanced by d.
func (c *Fake) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.AfterFunc(d, func() { ch <- c.Now() })
	return ch
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// Advance moves time by d and starts every timer due by then.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*timer
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.done:
		case !t.at.After(c.now):
			t.done = true
			due = append(due, t)
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		go t.f()
	}
}

// AdvanceToNext moves the clock to the earliest pending timer and starts
// it, with any due at the same instant. It returns false when none is
// pending.
func (c *Fake) AdvanceToNext() bool {
	c.mu.Lock()
	var next time.Time
	for _, t := range c.timers {
		if !t.done && (next.IsZero() || t.at.Before(next)) {
			next = t.at
		}
	}
	now := c.now
	c.mu.Unlock()
	if next.IsZero() {
		return false
	}
	c.Advance(max(next.Sub(now), 0))
	return true
}

// Pending counts the timers not yet run or stopped.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done {
			n++
		}
	}
	return n
}

// PendingIn reports whether a timer not yet run or stopped falls due d
// from now. A test that must advance past one timer among others waits
// for it by its duration, not by a count. An example is a body's deadline
// after a wait for room that is stopped at once.
func (c *Fake) PendingIn(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := c.now.Add(d)
	for _, t := range c.timers {
		if !t.done && t.at.Equal(at) {
			return true
		}
	}
	return false
}
