package main

import (
	"context"
	"fmt"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/httpapi"
)

// startupGrace bounds how long /healthz answers "starting". With ZooKeeper
// up, the first view comes in tens of milliseconds; without it, liveness
// must not wait on ZooKeeper (a restart would not bring it back).
const startupGrace = 2 * time.Second

// firstView reports whether st is worth announcing as "up": this
// participant leads, or it has joined and knows who leads. Before that,
// /leader says "leader": null although another sidecar may already lead.
func firstView(st election.Status) bool {
	return st.IsLeader || st.Joined && st.Leader != nil
}

// awaitFirstView reports true once views delivers a first view, false when
// timeout fires or views is closed first.
func awaitFirstView(views <-chan election.Status, timeout <-chan time.Time) bool {
	for {
		select {
		case st, ok := <-views:
			if !ok {
				return false
			}
			if firstView(st) {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// gateHealthz holds /healthz at "starting" until the election's first view
// or startupGrace, whichever comes first, so that a sidecar that answers
// 200 on /healthz (a startupProbe, a script waiting for electd) already
// names the leader on /leader.
func (d *daemon) gateHealthz(ctx context.Context) {
	defer close(d.started)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	timer := time.NewTimer(startupGrace)
	defer timer.Stop()
	viewed := awaitFirstView(d.el.Observe(ctx), timer.C)
	switch {
	case ctx.Err() != nil:
	case viewed:
		d.log.Info("first view of the election: /healthz answers ok", "took", time.Since(start))
	default:
		d.log.Warn("no view of the election yet: /healthz answers ok anyway", "after", time.Since(start))
	}
}

// errStarting is /healthz's answer before gateHealthz opens.
var errStarting = fmt.Errorf("%w (for at most %v after start)", httpapi.ErrStarting, startupGrace)
