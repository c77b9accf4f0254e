package e2e

import (
	"context"
	"slices"
	"testing"
	"time"
)

// within keeps the samples timed in [from, to], both ends included.
func TestWithinKeepsTheSpan(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	if got, want := within([]int{0, 1, 2, 3, 4}, at, at(1), at(3)), []int{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("within: %v, want %v", got, want)
	}
}

// every calls f until its context ends, then returns.
func TestEveryStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan struct{})
	done := make(chan struct{})
	go func() {
		every(ctx, time.Millisecond, func() { calls <- struct{}{} })
		close(done)
	}()
	for range 3 {
		<-calls
	}
	cancel()
	for {
		select {
		case <-calls: // a tick that raced with cancel
		case <-done:
			return
		case <-time.After(time.Minute):
			t.Fatal("every did not return after its context ended")
		}
	}
}
