package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"
)

// shutdown is docs/design/session-and-faults.md's "Process". It answers 503
// at once, waits shutdown_grace, deletes the own node, stops serving and
// closes the session, all within shutdown_timeout. With a forwarding proxy
// the first step is a hand-over (forward.Sidecar.HandOver). The proxy then
// forwards to the new leader through the grace.
//
// signalled says a signal started it; else a failure did. stopCapture ends
// the first signal's capture; from then on a second signal exits at once
// with status 1.
//
// Nothing here waits on a log write; they are queued (logging.AsyncWriter).
// Nothing waits on a client either: serving stops after a bounded drain
// (httpserver.Server.Stop).
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

	d.side.HandOver(ctx, func(ctx context.Context) {
		d.el.Drain()
		d.app.Stop(ctx) // exec mode: the command goes before leadership does
	})
	if g := d.cfg.ShutdownGrace; g > 0 && signalled {
		t := time.NewTimer(g)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	// The proxy's Serve drains what it holds to the new leader, then closes.
	d.side.StopServing(ctx)
	var failed error
	d.releaseKube(ctx)
	if err := d.el.Resign(ctx); err != nil {
		// Said once, as the exit's reason. The session's close below
		// deletes the node. A refusal for good ends Resign at once.
		failed = fmt.Errorf("could not delete the own node: %w", err)
	}
	d.cancelRequests()
	d.http.Stop(ctx)
	closeHold(d.hold) // after the last port closed: the holder keeps them
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

// kubeReleaseTimeout bounds the label's removal at shutdown.
const kubeReleaseTimeout = 3 * time.Second

// releaseKube removes the label from the own pod and gives up the Lease
// before the node is deleted. While leadership moves, the Service then has
// no endpoint rather than two. It takes at most kubeReleaseTimeout and half
// of what is left of shutdown_timeout. A dead API server must not hold up
// Resign; the next leader removes a label left behind.
func (d *daemon) releaseKube(ctx context.Context) {
	budget := kubeReleaseTimeout
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)/2)
	}
	kctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	if err := d.kube.Stop(kctx); err != nil {
		d.log.Warn("could not remove the leader label before resigning; the next leader removes it", "err", err)
	}
}
