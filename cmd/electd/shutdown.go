package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// shutdown is DESIGN.md's "Process": answer 503 at once, wait
// shutdown_grace, delete the own node, stop serving, close the session, all
// within shutdown_timeout. signalled says a signal started it (else a
// failure did); stopSignals ends the first signal's capture: from then on a
// second signal exits at once with status 1.
func (d *daemon) shutdown(signalled bool, stopSignals func()) error {
	second := make(chan os.Signal, 1)
	signal.Notify(second, syscall.SIGTERM, syscall.SIGINT)
	stopSignals()
	go func() {
		sig := <-second
		d.log.Warn("second signal: exiting at once", "signal", sig.String())
		os.Exit(1)
	}()

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownTimeout)
	defer cancel()
	if signalled {
		d.log.Info("shutting down", "grace", d.cfg.ShutdownGrace, "timeout", d.cfg.ShutdownTimeout)
	}

	d.el.Drain()
	if g := d.cfg.ShutdownGrace; g > 0 && signalled {
		t := time.NewTimer(g)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	var failed error
	d.releaseKube(ctx)
	if err := d.el.Resign(ctx); err != nil {
		failed = fmt.Errorf("could not delete the own node: %w", err)
		d.log.Warn("could not delete the own node; it goes when the session closes", "err", err)
	}
	d.cancelRequests()
	if err := d.srv.Shutdown(ctx); err != nil {
		d.srv.Close()
	}
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
