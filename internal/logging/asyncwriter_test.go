package logging

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stuckWriter blocks every Write until released, like a pipe nobody reads.
type stuckWriter struct {
	release chan struct{}
	entered chan struct{} // a Write is blocked
	mu      sync.Mutex
	buf     bytes.Buffer
}

func newStuckWriter() *stuckWriter {
	return &stuckWriter{release: make(chan struct{}), entered: make(chan struct{}, 1)}
}

func (s *stuckWriter) Write(p []byte) (int, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *stuckWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func notice(n uint64) []byte { return fmt.Appendf(nil, "dropped %d\n", n) }

// lines writes n lines named prefix-i to w; every Write must return at once.
func lines(w *AsyncWriter, prefix string, n int, size int) {
	pad := strings.Repeat("x", size)
	for i := range n {
		fmt.Fprintf(w, "%s-%d %s\n", prefix, i, pad)
	}
}

func TestAsyncWriterDropsAndSaysSoWhenTheReaderStalls(t *testing.T) {
	out := newStuckWriter()
	w := NewAsyncWriter(out, notice)
	fmt.Fprintln(w, "first") // taken by the writer, which then blocks in Write
	<-out.entered

	// The queue holds logQueueBytes; the lines past it are dropped. None of
	// these calls may block (the test would hang).
	const size = 1000
	fit := logQueueBytes / (size + len("a-000 \n") + 1)
	lines(w, "a", fit, size)
	lines(w, "lost", 50, size)
	if got := w.Dropped(); got < 50 {
		t.Fatalf("Dropped = %d, want at least 50", got)
	}
	dropped := w.Dropped()
	close(out.release)
	w.Flush(30 * time.Second)
	fmt.Fprintln(w, "after")
	w.Flush(30 * time.Second)

	got := out.String()
	if strings.Contains(got, "lost-") {
		t.Error("a line written past the full queue reached the output")
	}
	want := fmt.Sprintf("dropped %d\nafter\n", dropped)
	if !strings.HasPrefix(got, "first\na-0 ") || !strings.HasSuffix(got, want) {
		t.Errorf("output starts %q and ends %q; want first, the queued lines, then %q",
			got[:min(len(got), 20)], got[max(0, len(got)-40):], want)
	}
	if n := strings.Count(got, "\na-"); n+int(dropped) < fit+50 {
		t.Errorf("%d queued lines written and %d dropped, of %d", n, dropped, fit+50)
	}
}

// errWriter fails like a pipe whose reader went away.
type errWriter struct{}

func (errWriter) Write(p []byte) (int, error) { return 0, syscall.EPIPE }

func TestAsyncWriterCountsFailedWrites(t *testing.T) {
	w := NewAsyncWriter(errWriter{}, notice)
	for range 3 {
		fmt.Fprintln(w, "into a closed pipe")
		w.Flush(30 * time.Second)
	}
	if got := w.Dropped(); got != 3 {
		t.Errorf("Dropped = %d, want 3", got)
	}
}

// Flush gives up on a stuck reader: the exit never waits on it for longer
// than its timeout.
func TestAsyncWriterFlushDoesNotWaitOnAStuckReader(t *testing.T) {
	out := newStuckWriter()
	defer close(out.release)
	w := NewAsyncWriter(out, notice)
	fmt.Fprintln(w, "stuck")
	<-out.entered
	done := make(chan struct{})
	go func() {
		w.Flush(10 * time.Millisecond)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Flush waited on a stuck reader")
	}
}
