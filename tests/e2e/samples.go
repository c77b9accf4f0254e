package e2e

import (
	"context"
	"time"
)

// every calls f once an interval until ctx ends; the first call is an
// interval in. Callers run it in a goroutine of its own.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// within returns the samples whose time (at) lies in [from, to], in order.
func within[T any](samples []T, at func(T) time.Time, from, to time.Time) []T {
	var out []T
	for _, s := range samples {
		if t := at(s); !t.Before(from) && !t.After(to) {
			out = append(out, s)
		}
	}
	return out
}
