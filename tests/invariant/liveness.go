package invariant

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// LivenessBound is how soon docs/design/session-and-faults.md ("Failure semantics") promises a leader once the ensemble is
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
	for _, g := range uncovered(claimsSorted(samples), from, to) {
		if g.Len() > best.Len() {
			best = g
		}
	}
	return best
}

// Blind returns the parts of [from, to] longer than stall in which nobody was seen
// answering anything: the observer, or the whole machine, stalled (a loaded machine does
// that for seconds). stall should be well above the observer's polling period. What
// happened there is unknown, so the checks that measure what was seen leave them out
// (NoChange, SeenWithout).
func Blind(samples []Sample, from, to, stall time.Duration) []Interval {
	var answered []Sample
	for _, s := range samples {
		if s.Answered {
			answered = append(answered, s)
		}
	}
	sort.SliceStable(answered, func(i, j int) bool { return answered[i].Send < answered[j].Send })
	var out []Interval
	for _, g := range uncovered(answered, from, to) {
		if g.Len() > stall {
			out = append(out, g)
		}
	}
	return out
}

// SeenWithout is how much of w lies outside the blind intervals.
func SeenWithout(w Interval, blind []Interval) time.Duration {
	seen := w.Len()
	for _, b := range blind {
		if lo, hi := max(b.From, w.From), min(b.To, w.To); hi > lo {
			seen -= hi - lo
		}
	}
	return seen
}

// uncovered returns the parts of [from, to] that no sample's [Send, Recv] covers; the
// samples are sorted by Send.
func uncovered(sorted []Sample, from, to time.Duration) []Interval {
	var out []Interval
	if to <= from {
		return nil
	}
	cur := from // everything before cur is covered or already measured
	for _, s := range sorted {
		if s.Recv < from || s.Send > to {
			continue
		}
		if s.Send > cur {
			out = append(out, Interval{From: cur, To: s.Send})
		}
		cur = max(cur, s.Recv)
	}
	if cur < to {
		out = append(out, Interval{From: cur, To: to})
	}
	return out
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
// change), and leader's claims left no gap longer than maxGap outside the blind
// intervals (see Blind: nobody seen there, the leader no more than the others). It
// returns one line per problem (at most 20), none when leadership held.
func NoChange(samples []Sample, from, to time.Duration, leader string, token int64, maxGap time.Duration, blind []Interval) []string {
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
	for _, b := range blind {
		mine = append(mine, Sample{Who: leader, Answered: true, Leader: true, Send: b.From, Recv: b.To})
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
