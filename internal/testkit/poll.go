package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// every is For's pause between two polls.
const every = 10 * time.Millisecond

// For polls cond every 10ms until it holds, failing t after timeout with
// what it waited for. It returns how long it waited. The time is read
// before cond, so it fails only when cond did not hold at the deadline or
// later: a slow machine cannot fail a cond that holds by then.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		now := time.Now()
		if cond() {
			return time.Since(start)
		}
		if now.Sub(start) >= timeout {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(every)
	}
}

// Until calls check every interval until it returns nil, or returns its
// last error, wrapped with how long it waited, once ctx ends or timeout
// has passed (0: ctx alone bounds it). A check that returns a Stop error
// ends the wait at once with that error (a process that exited cannot
// become ready).
func Until(ctx context.Context, timeout, interval time.Duration, check func() error) error {
	start := time.Now()
	for {
		err := check()
		if err == nil {
			return nil
		}
		if s, ok := err.(stopError); ok {
			return s.err
		}
		if waited := time.Since(start); ctx.Err() != nil || timeout > 0 && waited > timeout {
			return fmt.Errorf("after %v: %w", waited.Round(time.Millisecond), err)
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// Stop makes Until return err at once.
func Stop(err error) error { return stopError{err} }

type stopError struct{ err error }

func (s stopError) Error() string { return s.err.Error() }
func (s stopError) Unwrap() error { return s.err }
