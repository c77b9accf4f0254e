package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/electd/electd/internal/election"
)

// shutdown is docs/DESIGN.md's "Process": answer 503 at once, wait
// shutdown_grace, delete the own node, stop serving, close the session, all
// within shutdown_timeout. With a forwarding proxy the first step is a
// hand-over (handOver) and the proxy forwards to the new leader through
// the grace. signalled says a signal started it (else a
// failure did); stopSignals ends the first signal's capture: from then on a
// second signal exits at once with status 1. Nothing here waits on a log
// write (they are queued, see logging.AsyncWriter) or on a client: serving stops
// after a bounded drain (httpserver.Server.Stop).
func (d *daemon) shutdown(signalled bool, stopCapture func()) error {
	second := make(chan os.Signal, 1)
	signal.Notify(second, d.signals...)
	stopCapture()
	go func() {
		sig := <-second
		d.log.Warn("second signal: exiting at once", "signal", sig.String())
		d.logs.Flush(exitFlush)
		os.Exit(1)
	}()

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownTimeout)
	defer cancel()
	if signalled {
		d.log.Info("shutting down", "grace", d.cfg.ShutdownGrace, "timeout", d.cfg.ShutdownTimeout)
	}

	if d.fwd != nil {
		d.handOver(ctx)
	} else {
		d.el.Drain()
		d.follow.stop(ctx) // exec mode: the command goes before leadership does
	}
	if g := d.cfg.ShutdownGrace; g > 0 && signalled {
		t := time.NewTimer(g)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if d.fwd != nil {
		// Serve drains what it holds to the new leader, then closes.
		d.fwd.StopServing(ctx)
	}
	var failed error
	d.releaseKube(ctx)
	if err := d.el.Resign(ctx); err != nil {
		// Said once, as the exit's reason; the session's close below
		// deletes the node (a refusal for good ends Resign at once).
		failed = fmt.Errorf("could not delete the own node: %w", err)
	}
	d.cancelRequests()
	d.http.Stop(ctx)
	closed := make(chan struct{})
	go func() {
		d.sess.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
		failed = fmt.Errorf("shutdown_timeout (%v) ran out", d.cfg.ShutdownTimeout)
	}
	if signalled {
		d.log.Info("shut down", "took", time.Since(start).Round(time.Millisecond))
	}
	return failed
}

// handOver leaves the election for good through the proxy's Yield
// (docs/DESIGN.md, "Forwarding": hand-overs): the requests the application
// has finish, new ones are held, then this participant answers 503, exec
// mode's command stops, and it withdraws, so that election.handoff picks
// its successor (newest: a rollout moves leadership once); the held
// requests go to the successor. It stays an observer, forwarding, until
// shutdown ends.
func (d *daemon) handOver(ctx context.Context) {
	err := d.fwd.Proxy().Yield(ctx, func(ctx context.Context) error {
		d.el.Drain()
		d.follow.stop(ctx)
		return d.el.SetCandidate(ctx, false, election.LossShutdown)
	})
	if err != nil {
		d.log.Warn("could not hand over before shutting down; resigning instead", "err", err)
	}
}
