package logging

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// logQueueBytes bounds the log lines waiting for a slow reader of stderr:
// a few seconds of a busy debug log, a fixed cost in memory.
const logQueueBytes = 256 << 10

// AsyncWriter makes the daemon's log writes non-blocking (docs/design/session-and-faults.md,
// "Process": nothing may wait on a log write). Write queues a copy of the
// line and returns at once; one goroutine writes the queue to w. When the
// queue is full (the reader of stderr stalls) lines are dropped and
// counted, and once writing works again a notice saying how many were
// dropped takes their place in the log. Writes that fail (EPIPE: the
// reader went away) count as dropped too.
type AsyncWriter struct {
	w      io.Writer
	notice func(dropped uint64) []byte // the line that reports a gap

	mu      sync.Mutex
	queue   []logEntry
	bytes   int  // queued, lines only
	writing bool // the goroutine holds a batch
	wake    chan struct{}
	idle    *sync.Cond // broadcast when the queue empties

	dropped atomic.Uint64 // in all, for the metric
}

// logEntry is a line, or (line == nil) a gap of dropped lines.
type logEntry struct {
	line    []byte
	dropped uint64
}

// NewAsyncWriter starts writing to w; notice renders the line that stands
// for dropped lines (DroppedNotice).
func NewAsyncWriter(w io.Writer, notice func(dropped uint64) []byte) *AsyncWriter {
	a := &AsyncWriter{w: w, notice: notice, wake: make(chan struct{}, 1)}
	a.idle = sync.NewCond(&a.mu)
	go a.run()
	return a
}

// Write never blocks on w. It reports success even for a dropped line:
// the caller (slog) could do nothing better with an error.
func (a *AsyncWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	if a.bytes+len(p) > logQueueBytes {
		a.gapLocked(1)
		a.mu.Unlock()
		return len(p), nil
	}
	a.queue = append(a.queue, logEntry{line: append([]byte(nil), p...)})
	a.bytes += len(p)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// gapLocked records n dropped lines at the end of the queue.
func (a *AsyncWriter) gapLocked(n uint64) {
	a.dropped.Add(n)
	if k := len(a.queue); k > 0 && a.queue[k-1].line == nil {
		a.queue[k-1].dropped += n
		return
	}
	a.queue = append(a.queue, logEntry{dropped: n})
}

// Dropped is how many lines were lost in all.
func (a *AsyncWriter) Dropped() uint64 { return a.dropped.Load() }

func (a *AsyncWriter) run() {
	for range a.wake {
		for a.writeBatch() {
		}
	}
}

// writeBatch writes what is queued; false when nothing was.
func (a *AsyncWriter) writeBatch() bool {
	a.mu.Lock()
	batch := a.queue
	a.queue, a.bytes, a.writing = nil, 0, len(batch) > 0
	if !a.writing {
		a.idle.Broadcast()
	}
	a.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	var failed uint64
	for _, e := range batch {
		line := e.line
		if line == nil {
			line = a.notice(e.dropped)
		}
		if _, err := a.w.Write(line); err != nil && e.line != nil {
			failed++
		}
	}
	a.dropped.Add(failed)
	a.mu.Lock()
	a.writing = false
	a.mu.Unlock()
	return true
}

// Flush waits until every queued line is written, for at most timeout: a
// stuck stderr never holds the exit for longer.
func (a *AsyncWriter) Flush(timeout time.Duration) {
	done := make(chan struct{})
	go func() {
		a.mu.Lock()
		for len(a.queue) > 0 || a.writing {
			a.idle.Wait()
		}
		a.mu.Unlock()
		close(done)
	}()
	select {
	case a.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
