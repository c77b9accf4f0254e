package kube

import (
	"context"
	"time"
)

// settleAfter is when a participant reads its own condition once more
// after it set it. A leader whose read of the queue predates the join may
// still write False: after its grace, a read and a write.
func (g *Gate) settleAfter() time.Duration { return g.cfg.GateGrace + 2*g.cfg.CallTimeout }

// runOwn sets the own pod's condition True at each join, and reads it once
// more settleAfter later. Failed rounds are retried with backoff while
// joined. It never sets the condition False: the leader or the kubelet do.
func (g *Gate) runOwn(ctx context.Context) {
	obs := g.src.Observe(ctx)
	var (
		joined  bool
		session int64
		due     bool // the own condition is to be checked now
		settled bool // the read after the join's write is done
		timer   <-chan time.Time
		backoff time.Duration
	)
	for {
		select {
		case st, ok := <-obs:
			if !ok {
				obs, st.Joined = nil, false // the election stopped
			}
			if st.Joined && (!joined || st.SessionID != session) {
				due, settled, timer, backoff = true, false, nil, 0
			}
			joined, session = st.Joined, st.SessionID
		case <-timer:
			timer, due = nil, true
		case <-ctx.Done():
			return
		}
		if !due || !joined {
			continue
		}
		due = false
		err := g.assertOwn(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			backoff = g.nextBackoff(backoff)
			timer = g.cfg.Clock.After(backoff)
		case !settled:
			settled, backoff = true, 0
			timer = g.cfg.Clock.After(g.settleAfter())
		}
	}
}

// assertOwn makes the own pod's condition True unless it is already.
func (g *Gate) assertOwn(ctx context.Context) error {
	self := g.cfg.PodName
	for range writeTries {
		pg, gone, err := g.read(ctx, self)
		switch {
		case err != nil:
			return err
		case gone:
			return g.call(ctx, opGetPodStatus, func(context.Context) error {
				return errOwnPodMissing
			})
		case pg.status == "True":
			return nil
		}
		changed, err := g.write(ctx, self, pg, podCondition{Status: "True", Reason: "Joined",
			Message: "this pod's participant is in the election"})
		if err != nil {
			return err
		}
		if !changed {
			g.rec.GateSet(true)
			g.log.Info("participant gate True on the own pod", "was", pg.status)
			return nil
		}
	}
	return errChanging
}
