package election_test

// The leader checker of the integration tests: a sampler reads every participant's
// Status every 2 ms for the whole test into an invariant.Log, and the checks are
// tests/harness/invariant's, the same the chaos suite runs on electd processes. Reads of one
// participant after another cannot prove two leaders at once unless one of them is seen
// leading again, with the same token, after the other claimed: CertainOverlaps. When a
// sweep sees two leaders, the sampler reads the earlier ones again at once, so that a
// real overlap is caught within microseconds.

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/wait"
)

// source is one participant as the sampler reads it.
type source struct {
	name   string
	status func() election.Status
}

type sampler struct {
	log     *invariant.Log
	sources func() []source
	every   time.Duration
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once

	mu        sync.Mutex
	tolerated []invariant.Interval // windows in which an overlap is recorded, not failed
}

// newSampler starts sampling the participants sources returns, every period.
func newSampler(sources func() []source, every time.Duration) *sampler {
	s := &sampler{log: invariant.NewLog(), sources: sources, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *sampler) loop() {
	defer close(s.done)
	tk := time.NewTicker(s.every)
	defer tk.Stop()
	for {
		s.sweep()
		select {
		case <-s.stop:
			s.sweep()
			return
		case <-tk.C:
		}
	}
}

// halt stops sampling after one last sweep. Idempotent.
func (s *sampler) halt() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

// sweep reads every participant once; if two or more lead, it reads all but the last
// of those again at once.
func (s *sampler) sweep() {
	srcs := s.sources()
	var leaders []source
	for _, src := range srcs {
		if x := s.read(src); x.Leader {
			leaders = append(leaders, src)
		}
	}
	for _, src := range leaders[:max(len(leaders)-1, 0)] {
		s.read(src)
	}
}

func (s *sampler) read(src source) invariant.Sample {
	send := s.log.Now()
	st := src.status()
	x := invariant.Sample{
		Who: src.name, Answered: true, Leader: st.IsLeader, Send: send, Recv: s.log.Now(),
		Token: st.FencingToken, Session: st.SessionID, Lease: st.LeaseRemaining, State: string(st.State),
	}
	s.log.Record(x)
	return x
}

// tolerate records, instead of failing on, two leaders seen within the next d: for an
// outside action (an administrator deleting the leader's node) that the old and the new
// leader learn of at the same moment.
func (s *sampler) tolerate(d time.Duration) {
	now := s.log.Now()
	s.mu.Lock()
	s.tolerated = append(s.tolerated, invariant.Interval{From: now, To: now + d})
	s.mu.Unlock()
}

// overlaps returns the certain overlaps so far, split into those that began in a
// tolerated window and the others.
func (s *sampler) overlaps() (tolerated, violations []invariant.SpanOverlap) {
	s.mu.Lock()
	windows := slices.Clone(s.tolerated)
	s.mu.Unlock()
	for _, o := range invariant.CertainOverlaps(s.log.Samples()) {
		began := invariant.Interval{From: o.B.From, To: o.B.From}
		if slices.ContainsFunc(windows, func(w invariant.Interval) bool { return w.Contains(began) }) {
			tolerated = append(tolerated, o)
		} else {
			violations = append(violations, o)
		}
	}
	return tolerated, violations
}

// check fails t for every overlap outside a tolerated window (five at most, with what
// every participant was seen doing around the first).
func (s *sampler) check(t testing.TB) {
	t.Helper()
	_, violations := s.overlaps()
	for i, o := range violations {
		if i == 5 {
			t.Errorf("... and %d more", len(violations)-5)
			break
		}
		t.Errorf("TWO LEADERS at once: %v", o)
	}
	if len(violations) > 0 {
		o := violations[0]
		t.Logf("around it:\n%s", invariant.Timeline(s.log.Samples(), invariant.Interval{From: o.B.From - 100*time.Millisecond, To: o.B.To + 100*time.Millisecond}))
	}
}

// ---------------------------------------------------------------------------
// what the tests ask about the samples

// start is the beginning of a leadership (a span of claims with one token).
type start struct {
	who string
	at  time.Time // when the sampler first saw it
}

// starts returns the leaderships that began at or after since, in order, leaving out the
// participants named in not.
func (s *sampler) starts(since time.Time, not ...string) []start {
	from := s.log.Offset(since)
	var out []start
	for _, sp := range invariant.Spans(s.log.Samples()) {
		if sp.First().Recv >= from && !slices.Contains(not, sp.Who) {
			out = append(out, start{who: sp.Who, at: s.log.Time(sp.First().Recv)})
		}
	}
	return out
}

// firstStart waits until the sampler has seen a leadership begin at or after since (by
// anyone not named in not) and returns the first. The caller has already seen one
// happen: the sampler may simply not have read it yet.
func (s *sampler) firstStart(t testing.TB, since time.Time, not ...string) start {
	t.Helper()
	var st []start
	wait.For(t, 10*time.Second, fmt.Sprintf("the sampler to see a leadership begin since %s (but %v's)",
		since.Format("15:04:05.000"), not), func() bool {
		st = s.starts(since, not...)
		return len(st) > 0
	})
	return st[0]
}

// lastLeading is when who was last seen leading (zero if never).
func (s *sampler) lastLeading(who string) time.Time {
	last, ok := invariant.LastClaim(s.log.Samples(), who)
	if !ok {
		return time.Time{}
	}
	return s.log.Time(last.Recv)
}

// lostSince says whether who was seen going from leading to not leading at or after since.
func (s *sampler) lostSince(who string, since time.Time) bool {
	from := s.log.Offset(since)
	led := false
	for _, x := range s.of(who) {
		if led && !x.Leader && x.Recv >= from {
			return true
		}
		led = x.Leader
	}
	return false
}

// states returns the sequence of connection states seen for who.
func (s *sampler) states(who string) []zksession.State {
	var out []zksession.State
	for _, x := range s.of(who) {
		if st := zksession.State(x.State); len(out) == 0 || out[len(out)-1] != st {
			out = append(out, st)
		}
	}
	return out
}

// of returns who's samples in the order they were taken.
func (s *sampler) of(who string) []invariant.Sample {
	var out []invariant.Sample
	for _, x := range s.log.Samples() {
		if x.Who == who {
			out = append(out, x)
		}
	}
	slices.SortStableFunc(out, func(a, b invariant.Sample) int { return int(a.Send - b.Send) })
	return out
}

// history renders what every participant was seen doing over the last d.
func (s *sampler) history(d time.Duration) string {
	now := s.log.Now()
	return fmt.Sprintf("last %v:\n%s", d, invariant.Timeline(s.log.Samples(), invariant.Interval{From: now - d, To: now}))
}
