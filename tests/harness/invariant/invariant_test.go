package invariant

import (
	"context"
	"slices"
	"testing"
	"time"
)

const msec = time.Millisecond

// at moves a sample's send time.
func at(s Sample, send time.Duration) Sample { s.Send = send; return s }

// s200 and s503 build synthetic samples: who, send and receive in ms.
func s200(who string, send, recv int) Sample {
	return Sample{Who: who, Answered: true, Leader: true, State: "200", Send: time.Duration(send) * msec, Recv: time.Duration(recv) * msec, Token: 7}
}

func s503(who string, send, recv int) Sample {
	return Sample{Who: who, Answered: true, State: "503", Send: time.Duration(send) * msec, Recv: time.Duration(recv) * msec}
}

func sNone(who string, send, recv int) Sample {
	return Sample{Who: who, Send: time.Duration(send) * msec, Recv: time.Duration(recv) * msec}
}

func TestOverlaps(t *testing.T) {
	tests := []struct {
		name    string
		samples []Sample
		wantN   int
	}{
		{name: "empty", wantN: 0},
		{name: "one leader polled continuously", samples: []Sample{s200("a", 0, 2), s200("a", 1, 3), s200("a", 3, 5), s503("b", 0, 5)}, wantN: 0},
		{name: "clean handoff", samples: []Sample{s200("a", 0, 2), s503("a", 3, 4), s503("b", 0, 2), s200("b", 5, 6)}, wantN: 0},
		{name: "intersecting intervals", samples: []Sample{s200("a", 0, 10), s200("b", 5, 6)}, wantN: 1},
		{name: "touching intervals count", samples: []Sample{s200("a", 0, 5), s200("b", 5, 6)}, wantN: 1},
		{name: "one microsecond apart does not", samples: []Sample{s200("a", 0, 5), at(s200("b", 0, 6), 5*msec+time.Microsecond)}, wantN: 0},
		{name: "unsorted input, long answer spans two others", samples: []Sample{s200("c", 8, 9), s200("a", 0, 10), s200("b", 2, 3)}, wantN: 2},
		{name: "503 and unanswered requests never count", samples: []Sample{s200("a", 0, 10), s503("b", 1, 9), sNone("c", 1, 9)}, wantN: 0},
		{name: "a long 200 seen after shorter ones of another", samples: []Sample{
			s200("b", 0, 1), s200("b", 2, 3), s200("a", 2, 30), s200("b", 25, 26),
		}, wantN: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Overlaps(tt.samples)
			if len(got) != tt.wantN {
				t.Fatalf("Overlaps: %d pairs %v, want %d", len(got), got, tt.wantN)
			}
			for _, o := range got {
				if o.A.Who == o.B.Who || !o.A.Leader || !o.B.Leader || o.A.Send > o.B.Recv || o.B.Send > o.A.Recv {
					t.Errorf("not an overlap: %v", o)
				}
			}
		})
	}
}

// TestOverlapsAgainstBruteForce compares the sweep with the obvious O(n^2)
// definition on pseudo-random samples.
func TestOverlapsAgainstBruteForce(t *testing.T) {
	seed := uint64(1)
	next := func(n int) int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int((seed >> 33) % uint64(n))
	}
	for round := range 200 {
		var ss []Sample
		for range 30 {
			send := next(200)
			s := s200([]string{"a", "b", "c"}[next(3)], send, send+next(15))
			if next(3) == 0 {
				s.Leader = false
			}
			ss = append(ss, s)
		}
		want := 0
		for i := range ss {
			for j := i + 1; j < len(ss); j++ {
				a, b := ss[i], ss[j]
				if a.Leader && b.Leader && a.Who != b.Who && a.Send <= b.Recv && b.Send <= a.Recv {
					want++
				}
			}
		}
		if got := len(Overlaps(ss)); got != want {
			t.Fatalf("round %d: Overlaps found %d pairs, brute force %d", round, got, want)
		}
	}
}

func TestLongestLeaderless(t *testing.T) {
	tests := []struct {
		name     string
		samples  []Sample
		from, to int
		want     Interval
	}{
		{name: "no 200 at all", samples: []Sample{s503("a", 0, 1)}, from: 0, to: 100,
			want: Interval{0, 100 * msec}},
		{name: "continuous coverage", samples: []Sample{s200("a", 0, 3), s200("a", 3, 6), s200("a", 5, 10)}, from: 0, to: 10,
			want: Interval{0, 0}},
		{name: "gap between leaders", samples: []Sample{s200("a", 0, 3), s200("a", 4, 5), s200("b", 40, 42), s200("b", 43, 50)}, from: 0, to: 50,
			want: Interval{5 * msec, 40 * msec}},
		{name: "leaderless start and end", samples: []Sample{s200("a", 20, 25)}, from: 0, to: 100,
			want: Interval{25 * msec, 100 * msec}},
		{name: "a long request covers a gap", samples: []Sample{s200("a", 0, 3), s200("b", 2, 30), s200("a", 29, 31)}, from: 0, to: 31,
			want: Interval{0, 0}},
		{name: "a sub-millisecond gap counts", samples: []Sample{s200("a", 0, 3), at(s200("a", 0, 5), 3*msec+500*time.Microsecond)}, from: 0, to: 5,
			want: Interval{3 * msec, 3*msec + 500*time.Microsecond}},
		{name: "clipped to the window", samples: []Sample{s200("a", 0, 10), s200("a", 90, 200)}, from: 50, to: 120,
			want: Interval{50 * msec, 90 * msec}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LongestLeaderless(tt.samples, time.Duration(tt.from)*msec, time.Duration(tt.to)*msec)
			if got.Len() != tt.want.Len() || (tt.want.Len() > 0 && got != tt.want) {
				t.Errorf("LongestLeaderless = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLiveness(t *testing.T) {
	samples := []Sample{
		s200("a", 0, 1), s503("a", 100, 101), // a loses leadership
		s503("b", 200, 201), s200("b", 300, 305), // b leads
		s200("a", 2000, 2001), // a again, much later
	}
	tests := []struct {
		name        string
		from, bound int
		exclude     []string
		wantElapsed int
		wantOK      bool
	}{
		{name: "b within the bound", from: 100, bound: 300, exclude: []string{"a"}, wantElapsed: 205, wantOK: true},
		{name: "b over the bound", from: 100, bound: 200, exclude: []string{"a"}, wantElapsed: 205, wantOK: false},
		{name: "exactly the bound", from: 100, bound: 205, wantElapsed: 205, wantOK: true},
		{name: "a request sent before from does not count", from: 301, bound: 5000, exclude: nil, wantElapsed: 1700, wantOK: true},
		{name: "nobody but the excluded", from: 301, bound: 5000, exclude: []string{"a"}, wantElapsed: 0, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			el, ok := Liveness(samples, time.Duration(tt.from)*msec, time.Duration(tt.bound)*msec, tt.exclude...)
			if el != time.Duration(tt.wantElapsed)*msec || ok != tt.wantOK {
				t.Errorf("Liveness = %v, %v; want %v, %v", el, ok, time.Duration(tt.wantElapsed)*msec, tt.wantOK)
			}
		})
	}
}

func TestNoChange(t *testing.T) {
	steady := func() []Sample {
		var ss []Sample
		for i := 0; i < 100; i += 4 {
			ss = append(ss, s200("a", i, i+3), s503("b", i, i+1))
		}
		return ss
	}
	tests := []struct {
		name   string
		mutate func([]Sample) []Sample
		wantN  int
	}{
		{name: "steady leader", mutate: func(s []Sample) []Sample { return s }, wantN: 0},
		{name: "unanswered request within the gap", mutate: func(s []Sample) []Sample {
			return append(s[:10], append([]Sample{sNone("a", 40, 45)}, s[12:]...)...)
		}, wantN: 0},
		{name: "leader answers 503 once", mutate: func(s []Sample) []Sample {
			return append(s, s503("a", 50, 51))
		}, wantN: 1},
		{name: "other participant answers 200", mutate: func(s []Sample) []Sample {
			return append(s, s200("b", 90, 91))
		}, wantN: 1},
		{name: "token changes", mutate: func(s []Sample) []Sample {
			x := s200("a", 60, 61)
			x.Token = 8
			return append(s, x)
		}, wantN: 1},
		{name: "everybody unseen: the observer stalled, not a change", mutate: func(s []Sample) []Sample {
			var out []Sample
			for _, x := range s {
				if x.Send < 20*msec || x.Send > 70*msec {
					out = append(out, x)
				}
			}
			return out
		}, wantN: 0},
		{name: "long silence", mutate: func(s []Sample) []Sample {
			var out []Sample
			for _, x := range s {
				if x.Who != "a" || x.Send < 20*msec || x.Send > 70*msec {
					out = append(out, x)
				}
			}
			return out
		}, wantN: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := tt.mutate(steady())
			got := NoChange(samples, 0, 99*msec, "a", 7, 10*msec, Blind(samples, 0, 99*msec, 5*msec))
			if len(got) != tt.wantN {
				t.Errorf("NoChange: %d problems %q, want %d", len(got), got, tt.wantN)
			}
		})
	}
}

func TestOrphans(t *testing.T) {
	n := func(name, id string, owner int64) Node { return Node{Name: name, ID: id, Owner: owner} }
	tests := []struct {
		name        string
		mode        string
		nodes       []Node
		live        []string
		wantOrphans []string // node names
		wantMissing []string
	}{
		{name: "latch exact", mode: "latch", nodes: []Node{n("x-1", "p1", 1), n("x-2", "p2", 2)}, live: []string{"p1", "p2"}},
		{name: "latch dead participant's node", mode: "latch", nodes: []Node{n("x-1", "p1", 1), n("x-2", "p2", 2)}, live: []string{"p2"},
			wantOrphans: []string{"x-1"}},
		{name: "latch second node of one id", mode: "selector", nodes: []Node{n("x-1", "p1", 1), n("x-3", "p1", 3)}, live: []string{"p1"},
			wantOrphans: []string{"x-3"}},
		{name: "latch second node of one session", mode: "latch", nodes: []Node{n("x-1", "p1", 1), n("x-3", "p2", 1)}, live: []string{"p1", "p2"},
			wantOrphans: []string{"x-3"}, wantMissing: []string{"p2"}},
		{name: "latch missing participant", mode: "latch", nodes: []Node{n("x-1", "p1", 1)}, live: []string{"p1", "p2"},
			wantMissing: []string{"p2"}},
		{name: "race leader node only", mode: "race", nodes: []Node{n("leader", "p2", 2)}, live: []string{"p1", "p2"}},
		{name: "race dead leader", mode: "race", nodes: []Node{n("leader", "p9", 9)}, live: []string{"p1"},
			wantOrphans: []string{"leader"}, wantMissing: []string{"<leader node>"}},
		{name: "race stray node", mode: "race", nodes: []Node{n("leader", "p1", 1), n("other", "p1", 1)}, live: []string{"p1"},
			wantOrphans: []string{"other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orphans, missing := Orphans(tt.mode, tt.nodes, tt.live)
			var names []string
			for _, o := range orphans {
				names = append(names, o.Name)
			}
			if !slices.Equal(names, tt.wantOrphans) || !slices.Equal(missing, tt.wantMissing) {
				t.Errorf("Orphans = %v, %v; want %v, %v", names, missing, tt.wantOrphans, tt.wantMissing)
			}
		})
	}
}

func TestSpansAndInferredOverlaps(t *testing.T) {
	tok := func(s Sample, token int64) Sample { s.Token = token; return s }
	tests := []struct {
		name      string
		samples   []Sample
		wantSpans int
		wantInf   int
		wantRaw   int
	}{
		{name: "steady leader, steady follower", samples: []Sample{
			s200("a", 0, 1), s200("a", 3, 4), s200("a", 6, 7), s503("b", 0, 1), s503("b", 3, 4),
		}, wantSpans: 1},
		{name: "clean handoff", samples: []Sample{
			s200("a", 0, 1), s200("a", 3, 4), s503("a", 6, 7), s503("b", 0, 1), s503("b", 3, 4), s200("b", 8, 9),
		}, wantSpans: 2},
		{name: "b leads between two polls of a: no request overlap, but inferred", samples: []Sample{
			s200("a", 0, 1), s200("a", 6, 7), s200("b", 3, 4),
		}, wantSpans: 2, wantInf: 1},
		{name: "an unanswered request ends a span", samples: []Sample{
			s200("a", 0, 1), sNone("a", 3, 250), s200("a", 260, 261), s200("b", 100, 101),
		}, wantSpans: 3},
		{name: "a new token ends a span", samples: []Sample{
			s200("a", 0, 1), tok(s200("a", 6, 7), 8), s200("b", 3, 4),
		}, wantSpans: 3},
		{name: "request overlap is also inferred", samples: []Sample{
			s200("a", 0, 10), s200("b", 5, 6),
		}, wantSpans: 2, wantInf: 1, wantRaw: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(Spans(tt.samples)); got != tt.wantSpans {
				t.Errorf("Spans: %d %v, want %d", got, Spans(tt.samples), tt.wantSpans)
			}
			if got := len(InferredOverlaps(tt.samples)); got != tt.wantInf {
				t.Errorf("InferredOverlaps: %d %v, want %d", got, InferredOverlaps(tt.samples), tt.wantInf)
			}
			if got := len(Overlaps(tt.samples)); got != tt.wantRaw {
				t.Errorf("Overlaps: %d, want %d", got, tt.wantRaw)
			}
		})
	}
}

// In-process reads of x, y, x one after the other: x still leads with its token after y
// claimed, which proves the overlap whatever the scheduler did between the reads; a
// handoff between two reads proves nothing.
func TestCertainOverlaps(t *testing.T) {
	tests := []struct {
		name    string
		samples []Sample
		want    int
	}{
		{name: "x, y, x again with one token", samples: []Sample{s200("x", 0, 1), s200("y", 2, 3), s200("x", 4, 5)}, want: 1},
		{name: "handoff between two reads", samples: []Sample{s200("x", 0, 1), s503("x", 4, 5), s200("y", 2, 3)}, want: 0},
		{name: "x's read spans y's: not proven", samples: []Sample{s200("x", 0, 10), s200("y", 2, 3)}, want: 0},
		{name: "y's claim overlaps x's certain stretch only in part", samples: []Sample{s200("x", 0, 1), s200("x", 4, 5), s200("y", 3, 9)}, want: 0},
		{name: "both certainly led over a common stretch", samples: []Sample{s200("x", 0, 1), s200("x", 10, 11), s200("y", 2, 3), s200("y", 8, 9)}, want: 1},
		{name: "a new token between: not one tenure", samples: []Sample{
			s200("x", 0, 1), s200("y", 2, 3), func() Sample { s := s200("x", 4, 5); s.Token = 9; return s }(),
		}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CertainOverlaps(tt.samples); len(got) != tt.want {
				t.Errorf("CertainOverlaps = %v, want %d", got, tt.want)
			}
			// Whatever is certain is also inferred.
			if c, i := len(CertainOverlaps(tt.samples)), len(InferredOverlaps(tt.samples)); c > i {
				t.Errorf("%d certain overlaps but only %d inferred", c, i)
			}
		})
	}
}

func TestNoMoveAllowsALapse(t *testing.T) {
	samples := []Sample{s200("a", 0, 1), s503("a", 10, 11), s503("b", 10, 11), s200("a", 20, 21)}
	if p := NoMove(samples, 0, 30*msec, "a", 7); len(p) != 0 {
		t.Errorf("NoMove over a lapse: %q", p)
	}
	if p := NoChange(samples, 0, 30*msec, "a", 7, 100*msec, nil); len(p) != 1 {
		t.Errorf("NoChange over a lapse: %q, want one problem", p)
	}
	moved := append(samples, s200("b", 15, 16))
	if p := NoMove(moved, 0, 30*msec, "a", 7); len(p) != 1 {
		t.Errorf("NoMove with another claim: %q, want one problem", p)
	}
}

func TestClaims(t *testing.T) {
	samples := []Sample{s200("a", 0, 1), s200("a", 10, 11), s503("a", 20, 21), s200("b", 12, 13)}
	if got := Claims(samples, "a", 5*msec, 30*msec); len(got) != 1 || got[0].Send != 10*msec {
		t.Errorf("Claims of a in [5, 30): %v", got)
	}
	if got := Claims(samples, "", 10*msec, 12*msec); len(got) != 1 {
		t.Errorf("Claims of anyone in [10, 12): %v, want a's at 10 only (until is exclusive)", got)
	}
}

func TestLogWait(t *testing.T) {
	l := NewLog()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan Sample, 1)
	go func() {
		s, err := l.WaitLeader(ctx, 5*msec, "a")
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	l.Record(s200("b", 0, 1)) // before t
	l.Record(s200("a", 6, 7)) // excluded
	l.Record(s503("b", 6, 7))
	l.Record(s200("b", 8, 9))
	if s := <-got; s.Who != "b" || s.Send != 8*msec {
		t.Errorf("WaitLeader = %v, want b's claim sent at 8ms", s)
	}
	if err := l.WaitCovered(ctx, 6*msec, "a", "b"); err != nil {
		t.Error(err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	if err := l.WaitCovered(short, 6*msec, "c"); err == nil {
		t.Error("WaitCovered of a participant never sampled returned nil")
	}
	if n := len(l.Samples()); n != 4 {
		t.Errorf("%d samples, want 4", n)
	}
}

func TestBlindAndSeen(t *testing.T) {
	samples := []Sample{s200("a", 0, 1), s503("b", 2, 3), sNone("a", 4, 300), s200("a", 310, 311), s503("b", 312, 313)}
	blind := Blind(samples, 0, 400*msec, 50*msec)
	if len(blind) != 2 || blind[0] != (Interval{3 * msec, 310 * msec}) || blind[1] != (Interval{313 * msec, 400 * msec}) {
		t.Fatalf("Blind = %v", blind)
	}
	if got := SeenWithout(Interval{0, 400 * msec}, blind); got != 6*msec {
		t.Errorf("SeenWithout = %v, want 6ms", got)
	}
	if got := Blind(samples, 0, 400*msec, time.Second); len(got) != 0 {
		t.Errorf("Blind with a long stall threshold = %v, want none", got)
	}
}

func TestIdle(t *testing.T) {
	fp := func(g int, r, q uint64) Footprint { return Footprint{Goroutines: g, Rechecks: r, Requests: q} }
	base := Window{Start: fp(20, 5, 30), End: fp(20, 5, 30), Length: 3 * time.Second}
	for _, tc := range []struct {
		name  string
		after Window
		bad   int
	}{
		{"idle", Window{fp(21, 9, 50), fp(22, 9, 50), 3 * time.Second}, 0},
		{"one late watch", Window{fp(21, 9, 50), fp(21, 10, 51), 3 * time.Second}, 0},
		{"leaking goroutines", Window{fp(40, 9, 50), fp(60, 9, 50), 3 * time.Second}, 1},
		{"spinning", Window{fp(20, 9, 50), fp(20, 69, 110), 3 * time.Second}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Idle(RestOf(base), tc.after); len(got) != tc.bad {
				t.Fatalf("Idle = %q, want %d problems", got, tc.bad)
			}
		})
	}
	// A participant that works at rest (a selector rotating) may keep doing so.
	busy := Window{Start: fp(20, 0, 0), End: fp(20, 6, 30), Length: 3 * time.Second}
	if got := Idle(RestOf(busy), Window{fp(20, 10, 50), fp(20, 16, 80), 3 * time.Second}); got != nil {
		t.Fatalf("Idle = %q for a rotation as at rest", got)
	}
}
