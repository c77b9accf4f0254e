package chaos

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"
)

// Sample is one answer of a participant's /healthz/leader as the observer
// saw it. Send and Recv are offsets on the observer's monotonic clock; a 200
// counts as a claim of leadership over the whole [Send, Recv] interval,
// because the answer was computed at some unknown instant inside it.
type Sample struct {
	Who    string        // participant name (unique per process incarnation)
	Status int           // HTTP status; 0 when no answer (timeout, refused)
	Send   time.Duration // request sent
	Recv   time.Duration // answer received (or the request gave up)
	Token  int64         // fencing_token of a 200 body
	Lease  int64         // lease_remaining_ms of the body
}

// OK reports whether the sample is a claim of leadership.
func (s Sample) OK() bool { return s.Status == http.StatusOK }

func (s Sample) String() string {
	return fmt.Sprintf("%s %d [%s, %s] token=%d lease=%dms", s.Who, s.Status, ms(s.Send), ms(s.Recv), s.Token, s.Lease)
}

// Interval is a span on the observer's clock.
type Interval struct{ From, To time.Duration }

// Len is the interval's length.
func (i Interval) Len() time.Duration { return i.To - i.From }

func (i Interval) String() string {
	return fmt.Sprintf("[%s, %s] (%s)", ms(i.From), ms(i.To), ms(i.Len()))
}

// Overlap is a pair of 200 answers from different participants whose
// [Send, Recv] intervals intersect: an instant at which two applications
// could both have believed they lead.
type Overlap struct{ A, B Sample }

func (o Overlap) String() string { return fmt.Sprintf("%v  overlaps  %v", o.A, o.B) }

// Overlaps returns every pair of 200 answers from different participants
// with intersecting intervals (closed intervals: touching counts), ordered by
// the later answer's send time. Samples need not be sorted.
func Overlaps(samples []Sample) []Overlap {
	ok := okSorted(samples)
	var out []Overlap
	var open []Sample // 200s whose Recv is not yet before the current Send
	for _, b := range ok {
		keep := open[:0]
		for _, a := range open {
			if a.Recv >= b.Send {
				keep = append(keep, a)
			}
		}
		open = keep
		for _, a := range open {
			if a.Who != b.Who {
				out = append(out, Overlap{A: a, B: b})
			}
		}
		open = append(open, b)
	}
	return out
}

// Span is a stretch of one participant's consecutive answers that were all
// 200 with one fencing token: it was seen leading, without a break, from the
// first request's send to the last one's receive.
type Span struct {
	Who         string
	Token       int64
	From, To    time.Duration
	First, Last Sample
}

func (s Span) String() string {
	return fmt.Sprintf("%s led (token %d) over %s", s.Who, s.Token, Interval{s.From, s.To})
}

// Spans merges each participant's consecutive 200 answers with one token
// into spans. Any other answer, an unanswered request (status 0) included,
// ends a span: only what was seen counts.
func Spans(samples []Sample) []Span {
	byWho := map[string][]Sample{}
	for _, s := range samples {
		byWho[s.Who] = append(byWho[s.Who], s)
	}
	var out []Span
	for _, ss := range byWho {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Send < ss[j].Send })
		var cur *Span
		for _, s := range ss {
			if cur != nil && (!s.OK() || s.Token != cur.Token) {
				out = append(out, *cur)
				cur = nil
			}
			if !s.OK() {
				continue
			}
			if cur == nil {
				cur = &Span{Who: s.Who, Token: s.Token, From: s.Send, To: s.Recv, First: s, Last: s}
				continue
			}
			cur.To = max(cur.To, s.Recv)
			cur.Last = s
		}
		if cur != nil {
			out = append(out, *cur)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out
}

// SpanOverlap is a pair of spans of different participants that intersect.
type SpanOverlap struct{ A, B Span }

func (o SpanOverlap) String() string { return fmt.Sprintf("%v  overlaps  %v", o.A, o.B) }

// InferredOverlaps returns the pairs of leadership spans (see Spans) of
// different participants that intersect. It is stricter than Overlaps: a
// participant polled every few milliseconds is taken to have led between
// two consecutive 200s with one token, so two leaders at once are caught
// even when no two requests happened to be in flight together.
func InferredOverlaps(samples []Sample) []SpanOverlap {
	spans := Spans(samples)
	var out []SpanOverlap
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if b.From > a.To {
				break
			}
			if a.Who != b.Who {
				out = append(out, SpanOverlap{A: a, B: b})
			}
		}
	}
	return out
}

// okSorted returns the 200 answers sorted by send time (then receive time).
func okSorted(samples []Sample) []Sample {
	var ok []Sample
	for _, s := range samples {
		if s.OK() {
			ok = append(ok, s)
		}
	}
	sort.SliceStable(ok, func(i, j int) bool {
		if ok[i].Send != ok[j].Send {
			return ok[i].Send < ok[j].Send
		}
		return ok[i].Recv < ok[j].Recv
	})
	return ok
}

// LongestLeaderless returns the longest part of [from, to] that no 200
// answer's [Send, Recv] covers: the longest time in which no participant was
// seen leading. A window with no 200 at all is leaderless throughout.
func LongestLeaderless(samples []Sample, from, to time.Duration) Interval {
	best := Interval{From: from, To: from}
	if to <= from {
		return best
	}
	cur := from // everything before cur is covered or already measured
	for _, s := range okSorted(samples) {
		if s.Recv < from || s.Send > to {
			continue
		}
		if s.Send > cur {
			if g := (Interval{From: cur, To: s.Send}); g.Len() > best.Len() {
				best = g
			}
		}
		if s.Recv > cur {
			cur = s.Recv
		}
	}
	if cur < to {
		if g := (Interval{From: cur, To: to}); g.Len() > best.Len() {
			best = g
		}
	}
	return best
}

// FirstLeader returns the earliest-sent 200 answer sent at or after t by a
// participant not in exclude.
func FirstLeader(samples []Sample, t time.Duration, exclude ...string) (Sample, bool) {
	var best Sample
	found := false
	for _, s := range samples {
		if !s.OK() || s.Send < t || slices.Contains(exclude, s.Who) {
			continue
		}
		if !found || s.Send < best.Send || (s.Send == best.Send && s.Recv < best.Recv) {
			best, found = s, true
		}
	}
	return best, found
}

// LastOK returns who's latest-received 200 answer.
func LastOK(samples []Sample, who string) (Sample, bool) {
	var best Sample
	found := false
	for _, s := range samples {
		if s.OK() && s.Who == who && (!found || s.Recv > best.Recv) {
			best, found = s, true
		}
	}
	return best, found
}

// FirstNotOK returns who's earliest-sent answer at or after t that is not a
// 200 but a real answer (a status other than 0): the moment it was seen to
// stop leading.
func FirstNotOK(samples []Sample, who string, t time.Duration) (Sample, bool) {
	var best Sample
	found := false
	for _, s := range samples {
		if s.Who != who || s.Send < t || s.OK() || s.Status == 0 {
			continue
		}
		if !found || s.Send < best.Send {
			best, found = s, true
		}
	}
	return best, found
}

// Liveness measures how long after t a leader was seen: the receive time of
// the first 200 sent at or after t (by a participant not in exclude), minus
// t. ok is false when the elapsed time exceeds bound or no leader was seen.
func Liveness(samples []Sample, t, bound time.Duration, exclude ...string) (elapsed time.Duration, ok bool) {
	s, found := FirstLeader(samples, t, exclude...)
	if !found {
		return 0, false
	}
	elapsed = s.Recv - t
	return elapsed, elapsed <= bound
}

// NoClaimsAfter returns the 200 answers sent at or after t and before until.
func NoClaimsAfter(samples []Sample, t, until time.Duration) []Sample {
	var out []Sample
	for _, s := range samples {
		if s.OK() && s.Send >= t && s.Send < until {
			out = append(out, s)
		}
	}
	return out
}

// NoChange checks that leadership did not change in [from, to]: every answer
// from leader was a 200 carrying token (an unanswered request, status 0, is
// the observer's loss, not a change), no other participant answered 200, and
// leader's 200s left no uncovered gap longer than maxGap. It returns one line
// per problem, none when leadership held.
func NoChange(samples []Sample, from, to time.Duration, leader string, token int64, maxGap time.Duration) []string {
	var problems []string
	var mine []Sample
	for _, s := range samples {
		if s.Recv < from || s.Send > to {
			continue
		}
		switch {
		case s.Who != leader && s.OK():
			problems = append(problems, fmt.Sprintf("another participant answered 200: %v", s))
		case s.Who != leader:
		case s.OK() && s.Token != token:
			problems = append(problems, fmt.Sprintf("fencing token changed from %d: %v", token, s))
		case s.OK():
			mine = append(mine, s)
		case s.Status != 0:
			problems = append(problems, fmt.Sprintf("leader answered %d: %v", s.Status, s))
		}
	}
	if g := LongestLeaderless(mine, from, to); g.Len() > maxGap {
		problems = append(problems, fmt.Sprintf("leader %s unseen as leader for %s, over %s", leader, g, ms(maxGap)))
	}
	if len(problems) > 20 {
		problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
	}
	return problems
}

// Node is one znode under the election path as read from ZooKeeper.
type Node struct {
	Name  string
	ID    string // participant id read from the node's data
	Owner int64  // ephemeralOwner session
}

// Orphans compares the nodes under the election path with the live
// participants' ids. In latch and selector mode each live participant must
// own exactly one node: orphans are nodes of no live participant and second
// nodes of one id (or of one session); missing are live ids without a node.
// In race mode only the leader owns a node, <path>/leader: every other node
// is an orphan, as is a leader node of no live participant, and missing is
// set when there is no leader node.
func Orphans(mode string, nodes []Node, live []string) (orphans []Node, missing []string) {
	isLive := map[string]bool{}
	for _, id := range live {
		isLive[id] = true
	}
	if mode == "race" {
		found := false
		for _, n := range nodes {
			if n.Name == "leader" && isLive[n.ID] && !found {
				found = true
				continue
			}
			orphans = append(orphans, n)
		}
		if !found && len(live) > 0 {
			missing = []string{"<leader node>"}
		}
		return orphans, missing
	}
	seenID := map[string]bool{}
	seenOwner := map[int64]bool{}
	for _, n := range nodes {
		if !isLive[n.ID] || seenID[n.ID] || (n.Owner != 0 && seenOwner[n.Owner]) {
			orphans = append(orphans, n)
			continue
		}
		seenID[n.ID] = true
		seenOwner[n.Owner] = true
	}
	for _, id := range live {
		if !seenID[id] {
			missing = append(missing, id)
		}
	}
	return orphans, missing
}

// ms formats a duration in milliseconds with one decimal.
func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
