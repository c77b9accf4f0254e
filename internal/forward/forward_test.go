package forward

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/proxy"
)

var (
	_ Election = (*election.Elector)(nil)
	_ Elector  = (*election.Elector)(nil)
	_ Yielder  = (*proxy.Proxy)(nil)
)

// fakeElection answers Status with st and sends what is put on ch.
type fakeElection struct {
	mu sync.Mutex
	st election.Status
	ch chan election.Status
}

func (f *fakeElection) Status() election.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeElection) Observe(context.Context) <-chan election.Status { return f.ch }

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
		{"a leader without a proxy (Curator)", election.Status{ID: "a", SessionID: 1, Leader: &election.Participant{ID: "c", Session: 3, FencingToken: 4}},
			proxy.Route{ID: "c", Token: 4}},
	} {
		l := NewLeadership(&fakeElection{st: tc.st})
		if got := l.Route(); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Changed fires at every status the election sends, and once more when
// it stops; StepDown calls what OnStepDown set.
func TestLeadershipWatchAndStepDown(t *testing.T) {
	f := &fakeElection{ch: make(chan election.Status)}
	l := NewLeadership(f)
	l.StepDown("nobody listens yet") // no panic, nothing
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Watch(context.Background())
	}()
	for range 2 {
		ch := l.Changed()
		f.ch <- election.Status{}
		<-ch
	}
	ch := l.Changed()
	close(f.ch)
	<-ch
	<-done
	var got string
	l.OnStepDown(func(reason string) { got = reason })
	l.StepDown("refuses")
	if got != "refuses" {
		t.Errorf("StepDown called with %q", got)
	}
}

// fakeElector records calls; a fakeYielder records around what it runs.
type fakeElector struct {
	Elector
	calls *[]string
}

func (f fakeElector) Release(context.Context) error {
	*f.calls = append(*f.calls, "release")
	return nil
}

func (f fakeElector) Switchover(_ context.Context, to string) error {
	*f.calls = append(*f.calls, "switchover "+to)
	return errors.New("refused")
}

func (f fakeElector) SetCandidate(_ context.Context, candidate bool, why election.LossReason) error {
	if candidate {
		*f.calls = append(*f.calls, "stand")
	} else {
		*f.calls = append(*f.calls, "withdraw "+string(why))
	}
	return nil
}

type fakeYielder struct{ calls *[]string }

func (y fakeYielder) Yield(ctx context.Context, f func(context.Context) error) error {
	*y.calls = append(*y.calls, "drain")
	err := f(ctx)
	*y.calls = append(*y.calls, "route again")
	return err
}

func TestYieldingWrapsEveryHandOver(t *testing.T) {
	var calls []string
	y := Yielding{Elector: fakeElector{calls: &calls}, Proxy: fakeYielder{calls: &calls}}
	ctx := context.Background()
	_ = y.Release(ctx)
	if err := y.Switchover(ctx, "b"); err == nil || err.Error() != "refused" {
		t.Errorf("Switchover's error %v, want the engine's", err)
	}
	_ = y.SetCandidate(ctx, false, election.LossShutdown)
	_ = y.SetCandidate(ctx, true, "")
	want := []string{"drain", "release", "route again", "drain", "switchover b", "route again",
		"drain", "withdraw shutdown", "route again", "stand"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
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
	r := NewRefusals(RefusalsConfig{App: addr, Set: func(why string) { set <- why }, DialTimeout: time.Second, RetryEvery: 5 * time.Millisecond})
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
