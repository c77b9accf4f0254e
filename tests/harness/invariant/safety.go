package invariant

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Overlap is a pair of claims from different participants whose [Send, Recv] intervals
// intersect: an instant at which two applications could both have believed they lead.
type Overlap struct{ A, B Sample }

func (o Overlap) String() string { return fmt.Sprintf("%v  overlaps  %v", o.A, o.B) }

// Overlaps returns every pair of claims from different participants with intersecting
// intervals (closed intervals: touching counts), ordered by the later claim's send time.
// It is the strictest reading of the samples, the one electd's HTTP contract promises for
// /healthz/leader: at no instant do two participants answer 200. Samples need not be sorted.
func Overlaps(samples []Sample) []Overlap {
	var out []Overlap
	var open []Sample // claims whose Recv is not yet before the current Send
	for _, b := range claimsSorted(samples) {
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

// Span is a stretch of one participant's consecutive answers that were all claims with
// one fencing token (and one session, when known): it was seen leading, without a break,
// from the first question's send to the last one's receive.
type Span struct {
	Who    string
	Token  int64
	From   time.Duration // First.Send
	To     time.Duration // latest Recv of its claims
	Claims []Sample      // in send order; never empty
}

// First and Last are the span's first and last claims.
func (s Span) First() Sample { return s.Claims[0] }
func (s Span) Last() Sample  { return s.Claims[len(s.Claims)-1] }

// Certain is the part of the span in which the participant certainly led: from the first
// claim's answer to the last claim's question. ok is false when the span is one claim
// (or claims whose questions overlapped), which proves an unknown instant only.
func (s Span) Certain() (Interval, bool) {
	i := Interval{From: s.First().Recv, To: s.Last().Send}
	return i, i.From <= i.To
}

func (s Span) String() string {
	return fmt.Sprintf("%s led (token %d) over %s, %d claims", s.Who, s.Token, Interval{s.From, s.To}, len(s.Claims))
}

// Spans merges each participant's consecutive claims with one token into spans. Any other
// answer, an unanswered question included, ends a span: only what was seen counts. The
// spans are ordered by From.
func Spans(samples []Sample) []Span {
	byWho := map[string][]Sample{}
	for _, s := range samples {
		byWho[s.Who] = append(byWho[s.Who], s)
	}
	var out []Span
	for _, ss := range byWho {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Send < ss[j].Send })
		start := -1
		for i, s := range ss {
			if start >= 0 && (!s.Leader || s.Token != ss[start].Token || s.Session != ss[start].Session) {
				out = append(out, spanOf(ss[start:i]))
				start = -1
			}
			if s.Leader && start < 0 {
				start = i
			}
		}
		if start >= 0 {
			out = append(out, spanOf(ss[start:]))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out
}

func spanOf(claims []Sample) Span {
	s := Span{Who: claims[0].Who, Token: claims[0].Token, From: claims[0].Send, Claims: claims}
	for _, c := range claims {
		s.To = max(s.To, c.Recv)
	}
	return s
}

// SpanOverlap is a pair of spans of different participants that intersect.
type SpanOverlap struct{ A, B Span }

func (o SpanOverlap) String() string {
	return fmt.Sprintf("%v  overlaps  %v; claims %v ... %v / %v ... %v", o.A, o.B, o.A.First(), o.A.Last(), o.B.First(), o.B.Last())
}

// InferredOverlaps returns the pairs of leadership spans (see Spans) of different
// participants that intersect. It is stricter than Overlaps: a participant polled every
// few milliseconds is taken to have led between two consecutive claims with one token, so
// two leaders at once are caught even when no two questions happened to be in flight
// together.
func InferredOverlaps(samples []Sample) []SpanOverlap {
	var out []SpanOverlap
	forIntersecting(Spans(samples), func(a, b Span) {
		out = append(out, SpanOverlap{A: a, B: b})
	})
	return out
}

// CertainOverlaps returns the pairs of spans of different participants that the samples
// prove overlapped: one participant claimed at an instant at which the other certainly led
// (a claim of one falls wholly inside the other's Certain interval), or both certainly led
// over a common stretch. It is what an observer that reads two participants one after the
// other can prove, whatever the scheduler did between its reads: x leads, then y leads,
// then x still leads with the same token.
func CertainOverlaps(samples []Sample) []SpanOverlap {
	var out []SpanOverlap
	forIntersecting(Spans(samples), func(a, b Span) {
		if certainlyOverlap(a, b) {
			out = append(out, SpanOverlap{A: a, B: b})
		}
	})
	return out
}

// forIntersecting calls f for each pair of spans (sorted by From) of different
// participants whose [From, To] intersect.
func forIntersecting(spans []Span, f func(a, b Span)) {
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if b.From > a.To {
				break
			}
			if a.Who != b.Who {
				f(a, b)
			}
		}
	}
}

func certainlyOverlap(a, b Span) bool {
	ca, okA := a.Certain()
	cb, okB := b.Certain()
	if okA && okB && ca.Intersects(cb) {
		return true
	}
	inside := func(c Interval, ok bool, claims []Sample) bool {
		return ok && slices.ContainsFunc(claims, func(s Sample) bool { return c.Contains(Interval{s.Send, s.Recv}) })
	}
	return inside(ca, okA, b.Claims) || inside(cb, okB, a.Claims)
}

// claimsSorted returns the claims sorted by send time (then receive time).
func claimsSorted(samples []Sample) []Sample {
	var out []Sample
	for _, s := range samples {
		if s.Leader {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Send != out[j].Send {
			return out[i].Send < out[j].Send
		}
		return out[i].Recv < out[j].Recv
	})
	return out
}
