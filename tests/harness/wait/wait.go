// Package wait is the harnesses' name for the one poller,
// internal/testkit's For and Until.
package wait

import (
	"context"
	"testing"
	"time"

	"github.com/electd/electd/internal/testkit"
)

// For is testkit.For: poll cond until it holds, or fail t after timeout.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return testkit.For(t, timeout, what, cond)
}

// Until is testkit.Until: call check until it returns nil, or return its
// last error once ctx ends or timeout has passed.
func Until(ctx context.Context, timeout, interval time.Duration, check func() error) error {
	return testkit.Until(ctx, timeout, interval, check)
}

// Stop is testkit.Stop: it makes Until return err at once.
func Stop(err error) error { return testkit.Stop(err) }
