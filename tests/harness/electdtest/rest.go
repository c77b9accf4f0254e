package electdtest

import (
	"context"
	"time"

	"github.com/electd/electd/tests/harness/invariant"
)

// Rests measures what procs do at rest: one window of length each, read
// together, as invariant.RestOf sees it.
func Rests(ctx context.Context, procs []*Proc, length time.Duration) ([]invariant.Rest, error) {
	ws, err := FootprintWindow(ctx, procs, length)
	if err != nil {
		return nil, err
	}
	out := make([]invariant.Rest, len(ws))
	for i, w := range ws {
		out[i] = invariant.RestOf(w)
	}
	return out, nil
}
