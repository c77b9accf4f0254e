package election

import "time"

// Clock is the time source for every deadline and wait in the package: the
// lease, claim_delay, the selector term, retries and back-offs. Times it
// returns must carry a monotonic reading (time.Now does) so that wall-clock
// steps cannot extend a lease.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f in its own goroutine after d, like time.AfterFunc.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of *time.Timer the package uses.
type Timer interface {
	Stop() bool
}

// RealClock is the Clock backed by package time.
type RealClock struct{}

func (RealClock) Now() time.Time { return time.Now() }

func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// after returns a channel closed d from now on c, and a function that stops
// the timer (the channel then never closes).
func after(c Clock, d time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	t := c.AfterFunc(d, func() { close(ch) })
	return ch, func() { t.Stop() }
}
