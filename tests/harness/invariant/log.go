package invariant

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Log is where observers put samples: safe for concurrent use, on one monotonic clock
// (time since the Log was made). The functions of this package read what Samples returns.
type Log struct {
	epoch time.Time

	mu      sync.Mutex
	samples []Sample
	changed chan struct{} // closed and replaced on every new sample
}

// NewLog returns an empty log whose clock starts now.
func NewLog() *Log {
	return &Log{epoch: time.Now(), changed: make(chan struct{})}
}

// Now is the log's clock: time since it was made, monotonic.
func (l *Log) Now() time.Duration { return time.Since(l.epoch) }

// Epoch is the wall-clock time of the log's time 0.
func (l *Log) Epoch() time.Time { return l.epoch }

// Time converts an offset on the log's clock to a time.Time (with a monotonic reading, so
// it compares exactly with time.Now()).
func (l *Log) Time(d time.Duration) time.Time { return l.epoch.Add(d) }

// Offset converts a time.Time to the log's clock.
func (l *Log) Offset(t time.Time) time.Duration { return t.Sub(l.epoch) }

// Record adds a sample.
func (l *Log) Record(s Sample) {
	l.mu.Lock()
	l.samples = append(l.samples, s)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// Samples returns a copy of every sample so far, in the order recorded.
func (l *Log) Samples() []Sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.samples)
}

// SamplesFrom returns a copy of the samples recorded from the i-th on (in the order
// recorded) and the index to read from next, for readers that follow the log as it grows.
func (l *Log) SamplesFrom(i int) ([]Sample, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i = min(max(i, 0), len(l.samples))
	return slices.Clone(l.samples[i:]), len(l.samples)
}

// WaitFor blocks until pred accepts a sample, or ctx ends. It scans every sample once, in
// the order recorded, and then only new ones.
func (l *Log) WaitFor(ctx context.Context, pred func(Sample) bool) (Sample, error) {
	next := 0
	for {
		l.mu.Lock()
		batch := l.samples[next:]
		next = len(l.samples)
		changed := l.changed
		l.mu.Unlock()
		for _, s := range batch {
			if pred(s) {
				return s, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Sample{}, ctx.Err()
		}
	}
}

// WaitLeader blocks until a claim sent at or after t by a participant not in exclude has
// been recorded, or ctx ends.
func (l *Log) WaitLeader(ctx context.Context, t time.Duration, exclude ...string) (Sample, error) {
	return l.WaitFor(ctx, func(s Sample) bool {
		return s.Leader && s.Send >= t && !slices.Contains(exclude, s.Who)
	})
}

// WaitCovered blocks until every participant named has answered (or failed to answer) a
// question sent at or after t, so that a window ending at t is fully observed.
func (l *Log) WaitCovered(ctx context.Context, t time.Duration, who ...string) error {
	left := map[string]bool{}
	for _, w := range who {
		left[w] = true
	}
	if len(left) == 0 {
		return nil
	}
	_, err := l.WaitFor(ctx, func(s Sample) bool {
		if s.Send >= t {
			delete(left, s.Who)
		}
		return len(left) == 0
	})
	return err
}
