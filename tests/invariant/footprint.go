package invariant

import (
	"fmt"
	"time"
)

// Footprint is what one participant holds and has asked of ZooKeeper, read
// from its /metrics at one instant: goroutines, and the cumulative queue
// re-checks and election requests (docs/design/election-and-lease.md, "Watches": a settled
// participant reads nothing until something changes).
type Footprint struct {
	Goroutines int
	Rechecks   uint64
	Requests   uint64
}

// Window is a participant's footprint at both ends of an interval.
type Window struct {
	Start, End Footprint
	Length     time.Duration
}

// Rest is what a participant at rest holds and does: its goroutines and its
// rates of re-checks and requests, per second.
type Rest struct {
	Goroutines         int
	Rechecks, Requests float64
}

// RestOf is the rest a window taken at rest shows.
func RestOf(w Window) Rest {
	r := Rest{Goroutines: w.End.Goroutines}
	if s := w.Length.Seconds(); s > 0 {
		r.Rechecks = float64(w.End.Rechecks-w.Start.Rechecks) / s
		r.Requests = float64(w.End.Requests-w.Start.Requests) / s
	}
	return r
}

// GoroutineSlack is how many goroutines more than at rest a settled
// participant may hold: connections the observer's own requests keep open
// come and go; a leak grows with every re-check, watch or reconnect.
const GoroutineSlack = 3

// Idle checks a window taken after a fault against rest: no more
// goroutines (within GoroutineSlack), and re-checks and requests no more
// often than twice the rest rate, a single one in the window aside (a watch
// set before the fault firing late). It returns what differs; nil when the
// participant is idle again.
func Idle(rest Rest, after Window) []string {
	var bad []string
	if g := after.End.Goroutines; g > rest.Goroutines+GoroutineSlack {
		bad = append(bad, fmt.Sprintf("%d goroutines, %d at rest", g, rest.Goroutines))
	}
	now := RestOf(after)
	for _, c := range []struct {
		what      string
		n         uint64
		now, rest float64
	}{
		{"queue re-checks", after.End.Rechecks - after.Start.Rechecks, now.Rechecks, rest.Rechecks},
		{"ZooKeeper requests", after.End.Requests - after.Start.Requests, now.Requests, rest.Requests},
	} {
		if c.n > 1 && c.now > 2*c.rest {
			bad = append(bad, fmt.Sprintf("%d %s in %v (%.2f/s), %.2f/s at rest", c.n, c.what,
				after.Length.Round(time.Millisecond), c.now, c.rest))
		}
	}
	return bad
}
