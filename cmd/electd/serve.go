package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/signal"

	"golang.org/x/sync/errgroup"

	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/logging"
)

// serve runs the election and the HTTP server until a signal or a failure.
// Then it shuts down as docs/design/session-and-faults.md's "Process" says.
func serve(cfg *config.Loaded, logs *logging.AsyncWriter, log *slog.Logger) int {
	sigs := stopSignals()
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	// exec.on_exit: exit ends electd as a signal does.
	ctx, quit := context.WithCancel(ctx)
	defer quit()
	d, err := newDaemon(cfg, logs, log)
	if err != nil {
		log.Error("electd cannot start", "err", err)
		return 1
	}
	d.signals = sigs

	// The election outlives the signal: shutdown resigns it after the grace.
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	g, gctx := errgroup.WithContext(ctx)
	go d.kube.Run(runCtx) // the election never waits on it; shutdown stops it
	go d.gate.Run(runCtx) // nor on this: a terminating pod leaves the Service anyway
	g.Go(func() error {
		if d.resumed {
			// Probes queue on the bound port meanwhile.
			awaitView(gctx, d.el, resumedViewWait)
		}
		return d.http.Serve()
	})
	// The proxy follows the election until the end of shutdown. A
	// participant that handed over forwards as an observer meanwhile.
	d.side.Watch(runCtx)
	g.Go(d.side.Serve)
	g.Go(func() error {
		d.app.Run(runCtx, quit)
		return nil
	})
	g.Go(func() error {
		d.history.Feed(d.el.Observe(runCtx)) // until the election stops
		return nil
	})
	g.Go(func() error {
		// Before a signal, Run returns nil only if a failure elsewhere
		// started the shutdown, which resigned. That failure is reported.
		if err := d.el.Run(runCtx); err != nil && ctx.Err() == nil {
			return fmt.Errorf("election stopped before any signal: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		defer cancelRun()
		return d.shutdown(ctx.Err() != nil, stop)
	})
	if err := g.Wait(); err != nil {
		d.log.Error("electd stopped", "err", err)
		return 1
	}
	d.log.Info("electd stopped")
	return d.app.ExitStatus()
}
