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
}

// curatorRig is three latches in one JVM; after each handoff the closed
// one's session closes (as an electd process exits) and a new latch joins
// at the back, as in the electd rounds.
type curatorRig struct {
	env *env
	jvm *curatorJVM
}

func newCuratorRig(env *env, path string) (*curatorRig, error) {
	cp, err := compileCurator()
	if err != nil {
		return nil, err
	}
	jvm, err := startCurator(env, cp, env.single.ConnectString(), path, 3, env.cfg.SessionTimeout)
	if err != nil {
		return nil, err
	}
	return &curatorRig{env: env, jvm: jvm}, nil
}

func (r *curatorRig) close() { r.jvm.close() }

// round hands over once and returns the JVM's timing and the packets the
// server received from the close until quiet.
func (r *curatorRig) round(ctx context.Context) (time.Duration, float64, time.Duration, error) {
	before, err := r.env.single.PacketsReceived()
	if err != nil {
		return 0, 0, 0, err
	}
	t0 := time.Now()
	s, err := r.jvm.do("handoff", "TOOK")
	if err != nil {
		return 0, 0, 0, err
	}
	ns, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("TOOK %q", s)
	}
	if _, err := r.jvm.do("retire", "OK"); err != nil {
		return 0, 0, 0, err
	}
	if err := sleep(ctx, quietAfter); err != nil {
		return 0, 0, 0, err
	}
	after, err := r.env.single.PacketsReceived()
	if err != nil {
		return 0, 0, 0, err
	}
	window := time.Since(t0)
	if _, err := r.jvm.do("refill", "OK"); err != nil {
		return 0, 0, 0, err
	}
	return time.Duration(ns), float64(after - before), window, nil
}
