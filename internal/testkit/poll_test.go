package testkit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalTB records For's failure instead of failing the test.
type fatalTB struct {
	testing.TB
	failed string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runFor runs For on a fatalTB, as a test goroutine would.
func runFor(t *testing.T, timeout time.Duration, cond func() bool) string {
	t.Helper()
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		For(tb, timeout, "the condition", cond)
	}()
	<-done
	return tb.failed
}

func TestForFailsWhenCondNeverHolds(t *testing.T) {
	got := runFor(t, 20*time.Millisecond, func() bool { return false })
	if want := "timed out after 20ms waiting for the condition"; got != want {
		t.Errorf("failed with %q, want %q", got, want)
	}
}

// A cond that holds once the deadline has passed is a success: For reads
// the time before it calls cond.
func TestForPassesACondThatHoldsAtTheDeadline(t *testing.T) {
	start := time.Now()
	if got := runFor(t, 30*time.Millisecond, func() bool { return time.Since(start) >= 30*time.Millisecond }); got != "" {
		t.Errorf("failed with %q", got)
	}
}

func TestUntilReturnsTheLastError(t *testing.T) {
	calls := 0
	err := Until(context.Background(), 20*time.Millisecond, time.Millisecond, func() error {
		calls++
		return fmt.Errorf("call %d", calls)
	})
	if err == nil || calls < 2 {
		t.Fatalf("Until = %v after %d calls, want the last call's error", err, calls)
	}
	if want := fmt.Sprintf(": call %d", calls); !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Until = %v, want it to end with %q", err, want)
	}
}

func TestUntilStopsAtOnce(t *testing.T) {
	gone := errors.New("exited")
	calls := 0
	err := Until(context.Background(), 0, time.Millisecond, func() error {
		calls++
		return Stop(gone)
	})
	if err != gone || calls != 1 {
		t.Errorf("Until = %v after %d calls, want %v after 1", err, calls, gone)
	}
}

func TestUntilEndsWithCtx(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Until(ctx, 0, time.Hour, func() error { return errors.New("not yet") }); err == nil {
		t.Error("Until = nil after ctx ended, want the check's error")
	}
}
