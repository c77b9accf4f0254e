package invariant

import (
	"fmt"
	"slices"
	"time"
)

// LivenessBound is how soon docs/DESIGN.md promises a leader once the ensemble is
// reachable after the last leader's crash: the negotiated session timeout (the crashed
// leader's session must expire), 1.5 x tickTime (ZooKeeper expires sessions on tick
// boundaries and followers report activity every half tick), and one second of
// scheduling.
func LivenessBound(sessionTimeout, tickTime time.Duration) time.Duration {
	return sessionTimeout + 3*tickTime/2 + time.Second
}

// LongestLeaderless returns the longest part of [from, to] that no claim's [Send, Recv]
// covers: the longest time in which no participant was seen leading. A window with no
// claim at all is leaderless throughout.
func LongestLeaderless(samples []Sample, from, to time.Duration) Interval {
	best := Interval{From: from, To: from}
	if to <= from {
		return best
	}
	cur := from // everything before cur is covered or already measured
	for _, s := range claimsSorted(samples) {
		if s.Recv < from || s.Send > to {
			continue
		}
		if s.Send > cur {
			if g := (Interval{From: cur, To: s.Send}); g.Len() > best.Len() {
				best = g
			}
		}
		cur = max(cur, s.Recv)
	}
	if cur < to {
		if g := (Interval{From: cur, To: to}); g.Len() > best.Len() {
			best = g
		}
	}
	return best
}

// FirstLeader returns the earliest-sent claim sent at or after t by a participant not in
// exclude.
func FirstLeader(samples []Sample, t time.Duration, exclude ...string) (Sample, bool) {
	return earliest(samples, func(s Sample) bool {
		return s.Leader && s.Send >= t && !slices.Contains(exclude, s.Who)
	})
}

// FirstNotLeader returns who's earliest-sent answer at or after t that is not a claim but
// a real answer: the moment it was seen to stop leading.
func FirstNotLeader(samples []Sample, who string, t time.Duration) (Sample, bool) {
	return earliest(samples, func(s Sample) bool {
		return s.Who == who && s.Send >= t && s.Answered && !s.Leader
	})
}

func earliest(samples []Sample, pred func(Sample) bool) (Sample, bool) {
	var best Sample
	found := false
	for _, s := range samples {
		if !pred(s) {
			continue
		}
		if !found || s.Send < best.Send || (s.Send == best.Send && s.Recv < best.Recv) {
			best, found = s, true
		}
	}
	return best, found
}

// LastClaim returns who's latest-received claim.
func LastClaim(samples []Sample, who string) (Sample, bool) {
	var best Sample
	found := false
	for _, s := range samples {
		if s.Leader && s.Who == who && (!found || s.Recv > best.Recv) {
			best, found = s, true
		}
	}
	return best, found
}

// Liveness measures how long after t a leader was seen: the receive time of the first
// claim sent at or after t (by a participant not in exclude), minus t. ok is false when
// the elapsed time exceeds bound or no leader was seen.
func Liveness(samples []Sample, t, bound time.Duration, exclude ...string) (elapsed time.Duration, ok bool) {
	s, found := FirstLeader(samples, t, exclude...)
	if !found {
		return 0, false
	}
	elapsed = s.Recv - t
	return elapsed, elapsed <= bound
}

// Claims returns the claims sent at or after from and before until, of who only unless
// who is "".
func Claims(samples []Sample, who string, from, until time.Duration) []Sample {
	var out []Sample
	for _, s := range samples {
		if s.Leader && s.Send >= from && s.Send < until && (who == "" || s.Who == who) {
			out = append(out, s)
		}
	}
	return out
}

// NoMove checks that leadership did not move in [from, to]: no participant but leader
// claimed, and leader's claims all carried token. Answers that are not claims, its own
// included, are allowed: a leader whose lease lapsed during an outage rightly stops
// claiming until it renews. It returns one line per problem (at most 20).
func NoMove(samples []Sample, from, to time.Duration, leader string, token int64) []string {
	return capped(noMove(samples, from, to, leader, token))
}

func noMove(samples []Sample, from, to time.Duration, leader string, token int64) []string {
	var problems []string
	for _, s := range within(samples, from, to) {
		switch {
		case s.Who != leader && s.Leader:
			problems = append(problems, fmt.Sprintf("another participant claimed: %v", s))
		case s.Who == leader && s.Leader && s.Token != token:
			problems = append(problems, fmt.Sprintf("fencing token changed from %d: %v", token, s))
		}
	}
	return problems
}

// NoChange checks that leadership did not even blink in [from, to]: NoMove, and every
// answer from leader was a claim (an unanswered question is the observer's loss, not a
// change), and leader's claims left no uncovered gap longer than maxGap. It returns one
// line per problem (at most 20), none when leadership held.
func NoChange(samples []Sample, from, to time.Duration, leader string, token int64, maxGap time.Duration) []string {
	problems := noMove(samples, from, to, leader, token)
	var mine []Sample
	for _, s := range within(samples, from, to) {
		switch {
		case s.Who != leader:
		case s.Leader:
			mine = append(mine, s)
		case s.Answered:
			problems = append(problems, fmt.Sprintf("leader stopped claiming: %v", s))
		}
	}
	if g := LongestLeaderless(mine, from, to); g.Len() > maxGap {
		problems = append(problems, fmt.Sprintf("leader %s unseen as leader for %s, over %s", leader, g, Ms(maxGap)))
	}
	return capped(problems)
}

// within returns the samples whose [Send, Recv] meets [from, to].
func within(samples []Sample, from, to time.Duration) []Sample {
	var out []Sample
	for _, s := range samples {
		if s.Recv >= from && s.Send <= to {
			out = append(out, s)
		}
	}
	return out
}

func capped(problems []string) []string {
	if len(problems) > 20 {
		problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
	}
	return problems
}
