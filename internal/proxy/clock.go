package proxy

import "time"

// Clock is the time source of every deadline the proxy computes itself:
// the hold time, the drain, the lease check, retries and the stall and
// idle guards. It has the shape of internal/election's Clock.
//
// Socket deadlines that net/http keeps for itself (reading request
// headers, idle keep-alive connections, awaiting response headers) are on
// the network poller's clock; the guard unblocks stalled reads and writes
// with a deadline in the past, which needs no clock.
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
