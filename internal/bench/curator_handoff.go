package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// CuratorResult is Curator's LeaderLatch handoff in one JVM: close() of the
// leading latch until the next latch's isLeader(), timed in the JVM.
type CuratorResult struct {
	Took Dist
	// Requests is ZooKeeper packets per leader change, counted as for electd.
	Requests []float64
	IdleRate float64
}

// runCuratorHandoff hands over rounds times among three latches, a new one
// joining at the back after each round, as the electd rounds do.
func runCuratorHandoff(ctx context.Context, env *env, warmup, rounds int) (*CuratorResult, error) {
	cp, err := compileCurator()
	if err != nil {
		return nil, err
	}
	jvm, err := startCurator(env, cp, env.single.ConnectString(), "/bench/curator", 3, env.cfg.SessionTimeout)
	if err != nil {
		return nil, err
	}
	defer jvm.close()
	res := &CuratorResult{}
	if res.IdleRate, err = idleRate(ctx, env, env.cfg.SettleWindow); err != nil {
		return nil, err
	}
	for i := range warmup + rounds {
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
		before, err := packetsReceived(env.single)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		s, err := jvm.do("handoff", "TOOK")
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", i+1, err)
		}
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("round %d: TOOK %q", i+1, s)
		}
		// Like the electd leader exiting: its session closes after the
		// delete.
		if _, err := jvm.do("retire", "OK"); err != nil {
			return nil, err
		}
		if err := sleep(ctx, quietAfter); err != nil {
			return nil, err
		}
		after, err := packetsReceived(env.single)
		if err != nil {
			return nil, err
		}
		window := time.Since(t0)
		if _, err := jvm.do("refill", "OK"); err != nil {
			return nil, err
		}
		if i < warmup {
			continue
		}
		took := time.Duration(ns)
		res.Took = append(res.Took, took)
		res.Requests = append(res.Requests, float64(after-before)-res.IdleRate*window.Seconds())
		env.progress("curator round %d/%d: %s", i+1-warmup, rounds, ms(took))
	}
	return res, nil
}
