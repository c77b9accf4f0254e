//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"
)

// atRest waits up to timeout for the flavour to be at rest (WaitStable)
// and returns its leader; without one the test stops, saying what it was.
func (d *Deployment) atRest(t *testing.T, ctx context.Context, timeout time.Duration, what string) string {
	t.Helper()
	leader, err := d.WaitStable(ctx, timeout)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return leader
}
