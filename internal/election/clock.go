package election

import "time"

// Clock is the time source for every deadline the package computes: the
// lease, claim_delay and the selector term. Times it returns must carry a
// monotonic reading (time.Now does) so that wall-clock steps cannot extend a
// lease.
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
