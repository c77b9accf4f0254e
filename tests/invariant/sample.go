// Package invariant states electd's election properties as pure functions over samples:
// who claimed to lead, when, with which fencing token. Two observers feed it: the chaos
// suite's and the end-to-end tests' poller of electd processes' /healthz/leader
// (tests/electdtest), and the in-process sampler of Electors in internal/election's
// tests. The properties are those of docs/design/session-and-faults.md,
// "Failure semantics":
//
//   - Safety: no two participants claim to lead at once (Overlaps, InferredOverlaps,
//     CertainOverlaps: from the strictest reading of the samples to what they prove).
//   - Liveness: a leader within a bound of a fault or its heal (Liveness, LivenessBound,
//     LongestLeaderless).
//   - Leases: a participant cut off stops claiming, and one that holds keeps its token
//     (Claims, NoMove, NoChange).
//   - No orphans: the nodes under the election path are exactly the live participants'
//     (Orphans).
//
// Times are offsets on one monotonic clock (a Log's). A sample's claim counts over the
// whole [Send, Recv] of its question, because the answer was computed at some unknown
// instant inside it.
package invariant

import (
	"fmt"
	"time"
)

// Sample is one answer of one participant to "do you lead?".
type Sample struct {
	Who      string        // participant name (unique per process incarnation)
	Answered bool          // false: no answer (timeout, refused): no claim either way
	Leader   bool          // it claimed to lead
	Send     time.Duration // question sent
	Recv     time.Duration // answer received (or the question given up)
	Token    int64         // fencing token of a claim
	Session  int64         // ZooKeeper session id, when the observer knows it (0 otherwise)
	Lease    time.Duration // lease remaining, as the participant reported it
	State    string        // what else it said, for reports: an HTTP status, a connection state
}

func (s Sample) String() string {
	claim := "follows"
	switch {
	case !s.Answered:
		claim = "no answer"
	case s.Leader:
		claim = "leads"
	}
	return fmt.Sprintf("%s %s (%s) [%s, %s] token=%d lease=%s", s.Who, claim, s.State, Ms(s.Send), Ms(s.Recv), s.Token, Ms(s.Lease))
}

// Interval is a span on the observer's clock.
type Interval struct{ From, To time.Duration }

// Len is the interval's length.
func (i Interval) Len() time.Duration { return i.To - i.From }

// Contains reports whether j lies within i.
func (i Interval) Contains(j Interval) bool { return i.From <= j.From && j.To <= i.To }

// Intersects reports whether i and j share an instant (closed intervals: touching counts).
func (i Interval) Intersects(j Interval) bool { return i.From <= j.To && j.From <= i.To }

func (i Interval) String() string {
	return fmt.Sprintf("[%s, %s] (%s)", Ms(i.From), Ms(i.To), Ms(i.Len()))
}

// Ms formats a duration in milliseconds with one decimal.
func Ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
