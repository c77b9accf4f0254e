package electdtest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/electd/electd/tests/harness/invariant"
)

// Footprint reads the process's goroutines and its election's ZooKeeper
// work from /metrics.
func (p *Proc) Footprint(ctx context.Context) (invariant.Footprint, error) {
	mfs, err := p.Metrics(ctx)
	if err != nil {
		return invariant.Footprint{}, err
	}
	var out [3]float64
	for i, name := range []string{"go_goroutines", "electd_election_rechecks_total", "electd_zk_requests_total"} {
		if out[i], err = Value(mfs, name); err != nil {
			return invariant.Footprint{}, fmt.Errorf("electd %s: %w", p.Name, err)
		}
	}
	return invariant.Footprint{Goroutines: int(out[0]), Rechecks: uint64(out[1]), Requests: uint64(out[2])}, nil
}

// FootprintWindow reads the footprints of procs, waits length, and reads
// them again.
func FootprintWindow(ctx context.Context, procs []*Proc, length time.Duration) ([]invariant.Window, error) {
	ws := make([]invariant.Window, len(procs))
	start := time.Now()
	for i, p := range procs {
		f, err := p.Footprint(ctx)
		if err != nil {
			return nil, err
		}
		ws[i].Start = f
	}
	t := time.NewTimer(length)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for i, p := range procs {
		f, err := p.Footprint(ctx)
		if err != nil {
			return nil, err
		}
		ws[i].End = f
		ws[i].Length = time.Since(start)
	}
	return ws, nil
}

// WaitIdle takes windows of length until every process is idle again
// compared with its rest (invariant.Idle), or ctx ends; the error then says
// what the last window showed.
func WaitIdle(ctx context.Context, procs []*Proc, rest []invariant.Rest, length time.Duration) error {
	var last []string
	for {
		ws, err := FootprintWindow(ctx, procs, length)
		if err != nil {
			if ctx.Err() != nil && last != nil {
				break
			}
			return err
		}
		last = last[:0]
		for i, p := range procs {
			for _, b := range invariant.Idle(rest[i], ws[i]) {
				last = append(last, p.Name+": "+b)
			}
		}
		if len(last) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("not idle again: %s", strings.Join(last, "; "))
}
