// Package clock is electd's one source of time. Every deadline, timer and
// rate limit in the election reads a Clock passed in, never package time
// directly, so that lease arithmetic, back-offs and health schedules are
// tested by moving a fake clock (clocktest.Fake) instead of sleeping. A
// socket deadline is the exception: the kernel checks it against its own
// clock, so it is read from package time.
package clock

import "time"

// Clock tells the time and runs timers. Times it returns carry a monotonic
// reading (time.Now's do), so that a wall-clock step cannot stretch a lease
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
// stops the timer (the channel then never closes): unlike After, a wait
// that ends early leaves no timer behind.
func Deadline(c Clock, d time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	t := c.AfterFunc(d, func() { close(ch) })
	return ch, func() { t.Stop() }
}
