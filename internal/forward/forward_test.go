package forward

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/proxy"
	"github.com/electd/electd/internal/testkit"
)

var _ Election = (*election.Elector)(nil)

func TestRoute(t *testing.T) {
	leader := &election.Participant{ID: "b", Session: 2, FencingToken: 9, Proxy: "10.0.0.2:4041"}
	for _, tc := range []struct {
		name string
		st   election.Status
		want proxy.Route
	}{
		{"leading", election.Status{ID: "a", IsLeader: true, FencingToken: 7, LeaseRemaining: 6 * time.Second, SessionID: 1,
			Leader: &election.Participant{ID: "a", Session: 1, FencingToken: 7, Proxy: "10.0.0.1:4041"}},
			proxy.Route{Leading: true, ID: "a", Token: 7, Lease: 6 * time.Second}},
		{"following", election.Status{ID: "a", SessionID: 1, Leader: leader},
			proxy.Route{ID: "b", Token: 9, Addr: "10.0.0.2:4041"}},
		{"no leader known", election.Status{ID: "a", SessionID: 1}, proxy.Route{}},
		{"itself, not leading (handing over, lease lapsed)", election.Status{ID: "a", SessionID: 1,
			Leader: &election.Participant{ID: "a", Session: 1, FencingToken: 7, Proxy: "10.0.0.1:4041"}}, proxy.Route{}},
		// A view of itself from an earlier session (its session expired,
		// a new one began, the election has not read the new leader yet):
		// the leader's proxy is its own peer port, which would only bounce.
		{"itself in an earlier session", election.Status{ID: "a", SessionID: 5, Proxy: "10.0.0.1:4041",
			Leader: &election.Participant{ID: "a", Session: 1, FencingToken: 7, Proxy: "10.0.0.1:4041"}}, proxy.Route{}},
		{"a leader without a proxy (Curator)", election.Status{ID: "a", SessionID: 1, Leader: &election.Participant{ID: "c", Session: 3, FencingToken: 4}},
			proxy.Route{ID: "c", Token: 4}},
	} {
		l := NewLeadership(electiontest.New(tc.st))
		if got := l.Route(); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Changed fires at every status the election sends, and once more when
// it stops; StepDown calls what OnStepDown set.
func TestLeadershipWatchAndStepDown(t *testing.T) {
	f := electiontest.New(election.Status{})
	l := NewLeadership(f)
	l.StepDown("nobody listens yet") // no panic, nothing
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Watch(context.Background())
	}()
	// Once the first status is read, each Set is a change Watch sees.
	testkit.For(t, 10*time.Second, "Watch to read the first status", func() bool { return f.Observers() == 1 && f.Unread() == 0 })
	for i := range 2 {
		ch := l.Changed()
		f.Set(election.Status{FencingToken: int64(i + 1)})
		<-ch
	}
	ch := l.Changed()
	f.Stop()
	<-ch
	<-done
	var got string
	l.OnStepDown(func(reason string) { got = reason })
	l.StepDown("refuses")
	if got != "refuses" {
		t.Errorf("StepDown called with %q", got)
	}
}

// A refusal is recorded at once and lifted once the application takes a
// connection again; a refusal recorded while the application is dialled
// is not lifted by that dial.
func TestRefusals(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refusing
	set := make(chan string, 8)
	r := newRefusals(refusalsConfig{App: addr, Set: func(why string) { set <- why }, DialTimeout: time.Second, RetryEvery: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	r.StepDown("the application refuses connections")
	if why := <-set; why == "" || !r.Refused() {
		t.Fatalf("first Set(%q), refused %v", why, r.Refused())
	}
	time.Sleep(30 * time.Millisecond) // a few refused dials
	select {
	case why := <-set:
		t.Fatalf("lifted (%q) while the application refuses", why)
	default:
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer ln.Close()
	select {
	case why := <-set:
		if why != "" || r.Refused() {
			t.Fatalf("Set(%q), refused %v, want the refusal lifted", why, r.Refused())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not lifted once the application takes connections")
	}
}

// A Sidecar without proxy.listen binds nothing, publishes nothing and
// runs what its Yield and HandOver are given.
func TestDisabledSidecar(t *testing.T) {
	s, err := Listen(proxy.Config{}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Enabled() || s.Advertise() != "" || s.TermEnd() != nil || s.State() != nil {
		t.Errorf("enabled %v, publishes %q, TermEnd %v, State %v: want nothing",
			s.Enabled(), s.Advertise(), s.TermEnd() != nil, s.State())
	}
	if err := s.Build(electiontest.New(election.Status{}), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	s.Watch(context.Background())
	ran := 0
	if err := s.Yield(context.Background(), func(context.Context) error { ran++; return nil }); err != nil {
		t.Fatal(err)
	}
	s.HandOver(context.Background(), func(context.Context) { ran++ })
	if ran != 2 {
		t.Errorf("ran %d of 2", ran)
	}
	if err := s.Serve(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	s.StopServing(context.Background())
	s.Close()
}

// A port 0 in the published address stands for the port bound.
func TestAdvertisedPort(t *testing.T) {
	bound := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40417}
	for advertise, want := range map[string]string{
		"127.0.0.1:0": "127.0.0.1:40417", "10.0.0.7:4041": "10.0.0.7:4041", "[fd00::7]:0": "[fd00::7]:40417",
	} {
		if got := withPort(advertise, bound); got != want {
			t.Errorf("withPort(%q) = %q, want %q", advertise, got, want)
		}
	}
}

// The memory a burst left behind is given back once the proxy has been
// quiet for a whole period after it: not while it is busy, not again while
// it stays quiet, and again after the next burst.
func TestTrimWhenQuiet(t *testing.T) {
	c := clocktest.NewFake(time.Unix(0, 0))
	var served atomic.Uint64
	released := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		trimWhenQuiet(ctx, c, served.Load, func() { released <- struct{}{} })
	}()
	defer func() { cancel(); <-done }()
	period := func(requests uint64) {
		t.Helper()
		waitPending(t, c)
		served.Add(requests)
		c.Advance(trimEvery)
	}
	none := func(what string) {
		t.Helper()
		waitPending(t, c) // the period was looked at
		select {
		case <-released:
			t.Fatalf("released %s", what)
		default:
		}
	}
	period(0)
	none("while nothing ever came")
	period(5)
	none("while busy")
	period(3)
	none("while busy")
	period(0)
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("not released after a quiet period")
	}
	period(0)
	none("twice in one quiet spell")
	period(1)
	period(0)
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("not released after the next burst")
	}
}

// waitPending waits until something waits on c's timers.
func waitPending(t *testing.T, c *clocktest.Fake) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("nothing waits on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}
