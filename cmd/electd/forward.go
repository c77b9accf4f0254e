package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/forward"
	"github.com/electd/electd/internal/metrics"
	"github.com/electd/electd/internal/proxy"
)

// forwarding is the forwarding proxy with what joins it to the election
// (docs/DESIGN.md, "Forwarding"; internal/forward): nil without
// proxy.listen.
type forwarding struct {
	cfg          proxy.Config
	px           *proxy.Proxy
	lead         *forward.Leadership
	refusals     *forward.Refusals
	client, peer net.Listener
	advertise    string          // what peers dial, as published
	sctx         context.Context // Serve's; stopServing ends it
	stop         context.CancelFunc
	done         chan struct{} // closed when Serve has returned
}

// listenProxy binds the proxy's ports, before anything touches ZooKeeper,
// and returns the address to publish (a port 0 in proxy.advertise stands
// for the port bound).
func listenProxy(cfg *config.Loaded) (*forwarding, error) {
	pc := cfg.Prepared.Proxy
	if pc.Listen == "" {
		return nil, nil
	}
	client, peer, err := pc.Listeners()
	if err != nil {
		return nil, fmt.Errorf("cannot listen on proxy.listen or proxy.peer_listen: %w", err)
	}
	bound := client.Addr()
	if peer != nil {
		bound = peer.Addr()
	}
	f := &forwarding{cfg: pc, client: client, peer: peer, advertise: config.ProxyAdvertise(cfg.Prepared.Election.Proxy, bound),
		done: make(chan struct{})}
	f.sctx, f.stop = context.WithCancel(context.Background())
	return f, nil
}

// close releases the listeners of a proxy that never served.
func (f *forwarding) close() {
	if f == nil {
		return
	}
	_ = f.client.Close()
	if f.peer != nil {
		_ = f.peer.Close()
	}
}

// build makes the proxy on el, its metrics on reg; its step-downs withdraw
// this participant through refused (the candidacy's SetAppRefused) until
// the application takes connections again.
func (f *forwarding) build(el *election.Elector, reg prometheus.Registerer, path string, refused func(why string), log *slog.Logger) error {
	f.lead = forward.NewLeadership(el)
	f.cfg.Logger = log
	f.cfg.Recorder = metrics.NewProxy(reg, path, proxyGauges{f})
	px, err := proxy.New(f.lead, f.cfg)
	if err != nil {
		return err
	}
	f.px = px
	f.refusals = forward.NewRefusals(forward.RefusalsConfig{
		App: f.cfg.App, Set: refused, DialTimeout: f.cfg.DialTimeout, Logger: log,
	})
	f.lead.OnStepDown(f.refusals.StepDown)
	log.Info("forwarding the application's traffic to the leader", "mode", f.cfg.Mode, "listen", f.client.Addr().String(),
		"app", f.cfg.App, "advertise", f.advertise, "hold_time", f.cfg.HoldTime)
	return nil
}

// proxyGauges are the proxy's gauges, read at scrape time: the proxy is
// made after its metrics, which it records to.
type proxyGauges struct{ f *forwarding }

func (g proxyGauges) Held() int { return g.f.px.Held() }
func (g proxyGauges) Open() int { return g.f.px.Open() }

// watch follows the election and the application's refusals until ctx
// ends.
func (f *forwarding) watch(ctx context.Context) {
	go f.lead.Watch(ctx)
	go f.refusals.Run(ctx)
}

// serve serves the proxy until stopServing, and returns an error when it
// stops before that.
func (f *forwarding) serve() error {
	defer close(f.done)
	err := f.px.Serve(f.sctx, f.client, f.peer)
	if f.sctx.Err() == nil {
		return fmt.Errorf("the forwarding proxy stopped: %v", err)
	}
	return err
}

// stopServing ends Serve, which gives what is in flight and held the
// drain timeout (held requests go to the new leader meanwhile), and waits
// for it, at most until ctx ends.
func (f *forwarding) stopServing(ctx context.Context) {
	f.stop()
	select {
	case <-f.done:
	case <-ctx.Done():
	}
}

// state is the proxy's line on /leader and the status page.
func (f *forwarding) state() api.ProxyStatus {
	s := f.px.State()
	return api.ProxyStatus{Mode: string(s.Mode), Advertise: f.advertise, Route: s.Route, To: s.To,
		Held: s.Held, Connections: s.Connections, InFlight: s.InFlight}
}

// termEnd is election.Config.TermEnd: a selector's term ends through the
// proxy's Yield, as every other hand-over does.
func (f *forwarding) termEnd(ctx context.Context, release func(context.Context) error) error {
	return f.px.Yield(ctx, release)
}
