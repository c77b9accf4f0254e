package electiontest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/electd/electd/internal/election"
)

func TestObserveSendsLatestThenCloses(t *testing.T) {
	f := New(election.Status{ID: "a"})
	ctx, cancel := context.WithCancel(context.Background())
	ch := f.Observe(ctx)
	f.Set(election.Status{ID: "b"})
	f.Set(election.Status{ID: "c"}) // replaces b, unread
	f.SetQuiet(election.Status{ID: "d"})
	if got := (<-ch).ID; got != "c" {
		t.Errorf("observed %q, want the latest set, c", got)
	}
	if f.Observers() != 1 || f.Unread() != 0 {
		t.Errorf("observers %d, unread %d; want 1, 0", f.Observers(), f.Unread())
	}
	cancel()
	if _, ok := <-ch; ok {
		t.Error("a value after ctx ended")
	}
	if f.Observers() != 0 {
		t.Errorf("observers %d after ctx ended", f.Observers())
	}
	f.Stop()
	f.Stop() // a second Stop is harmless
	ch = f.Observe(context.Background())
	if st, ok := <-ch; !ok || st.ID != "d" {
		t.Errorf("after Stop: %+v %v, want the status once", st, ok)
	}
	if _, ok := <-ch; ok {
		t.Error("Observe's channel open after Stop")
	}
}

func TestAwaitUntilLeader(t *testing.T) {
	f := New(election.Status{})
	got := make(chan (<-chan struct{}), 1)
	go func() {
		lost, err := f.Await(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- lost
	}()
	f.Set(election.Status{IsLeader: true})
	lost := <-got
	select {
	case <-lost:
		t.Fatal("lost while leading")
	default:
	}
	f.Set(election.Status{})
	<-lost
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Await(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Await on a follower with ctx ended: %v", err)
	}
	f.Stop()
	if _, err := f.Await(context.Background()); !errors.Is(err, election.ErrClosed) {
		t.Errorf("Await after Stop: %v", err)
	}
}

func TestFailInterceptCalls(t *testing.T) {
	f := New(election.Status{})
	refused := errors.New("refused")
	f.Fail(Switchover, refused)
	f.Fail(Participants, refused)
	ctx := context.Background()
	if err := f.Switchover(ctx, "b"); err != refused {
		t.Errorf("first Switchover: %v", err)
	}
	if err := f.Switchover(ctx, "c"); err != nil {
		t.Errorf("second Switchover: %v", err)
	}
	f.SetParticipants([]election.Participant{{ID: "a"}})
	if _, err := f.Participants(ctx); err != refused {
		t.Errorf("first Participants: %v", err)
	}
	if ps, err := f.Participants(ctx); err != nil || len(ps) != 1 {
		t.Errorf("second Participants: %v %v", ps, err)
	}
	f.Intercept(func(_ context.Context, call string) error {
		if call == "release" {
			return election.ErrNotLeader
		}
		return nil
	})
	if err := f.Release(ctx); !errors.Is(err, election.ErrNotLeader) {
		t.Errorf("intercepted Release: %v", err)
	}
	_ = f.SetCandidate(ctx, false, election.LossShutdown)
	_ = f.SetCandidate(ctx, true, "")
	f.SetAppUp(true)
	want := []string{"switchover b", "switchover c", "participants", "participants", "release", "withdraw shutdown", "stand", "app up"}
	if got := f.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
}
