// Package clock is electd's one source of time for what a test has to
// move. These read a Clock passed in, never package time:
//   - the lease and its arithmetic;
//   - back-offs and retries (the session's, exec mode's restarts, the
//     candidacy's);
//   - health-check schedules and rate limits.
//
// Tests then move a fake clock (clocktest.Fake) instead of sleeping.
//
// Package time is left to bounds no test moves:
//   - a context's timeout on one call;
//   - socket deadlines (net takes wall-clock instants);
//   - periodic ticks (the /events keep-alive, exec mode's lease refresh);
//   - exec mode's guard process, which times the lease on CLOCK_MONOTONIC;
//   - the shutdown's timers.
package clock

import "time"

// Clock tells the time and runs timers. Its times carry a monotonic
// reading, as time.Now's do. A wall-clock step then cannot stretch a lease
// or a timeout.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f in its own goroutine after d, like time.AfterFunc.
	AfterFunc(d time.Duration, f func()) Timer
	// After returns a channel that receives the time once d has passed,
	// like time.After.
	After(d time.Duration) <-chan time.Time
}

// Timer is the part of *time.Timer electd uses.
type Timer interface {
	Stop() bool
}

// Real returns the Clock of package time.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
func (realClock) After(d time.Duration) <-chan time.Time    { return time.After(d) }

// Deadline returns a channel closed d from now on c, and a function that
// stops the timer; the channel then never closes. Unlike After, a wait
// that ends early leaves no timer behind.
func Deadline(c Clock, d time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	t := c.AfterFunc(d, func() { close(ch) })
	return ch, func() { t.Stop() }
}
