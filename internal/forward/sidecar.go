package forward

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/proxy"
)

// Sidecar is the forwarding proxy as electd runs it (docs/DESIGN.md,
// "Forwarding"): its ports, bound before anything touches ZooKeeper; the
// proxy on the election's Leadership; the Refusals that withdraw this
// participant while its application refuses connections. Listen, then
// Build, then Watch and Serve; StopServing at shutdown.
type Sidecar struct {
	// Advertise is what peers dial, as published (the caller derives it
	// from Bound before Build).
	Advertise string

	cfg          proxy.Config
	px           *proxy.Proxy
	lead         *Leadership
	refusals     *Refusals
	client, peer net.Listener
	sctx         context.Context // Serve's; StopServing ends it
	stop         context.CancelFunc
	done         chan struct{} // closed when Serve has returned
}

// Listen binds cfg's ports (cfg.Listeners).
func Listen(cfg proxy.Config) (*Sidecar, error) {
	client, peer, err := cfg.Listeners()
	if err != nil {
		return nil, fmt.Errorf("cannot listen on proxy.listen or proxy.peer_listen: %w", err)
	}
	s := &Sidecar{cfg: cfg, client: client, peer: peer, done: make(chan struct{})}
	s.sctx, s.stop = context.WithCancel(context.Background())
	return s, nil
}

// Bound is the address peers reach: the peer port.
func (s *Sidecar) Bound() net.Addr { return s.peer.Addr() }

// Close releases the ports of a Sidecar that never served.
func (s *Sidecar) Close() {
	_ = s.client.Close()
	_ = s.peer.Close()
}

// Build makes the proxy on el, recording to rec; its step-downs withdraw
// this participant through refused (the candidacy's SetAppRefused) until
// the application takes connections again.
func (s *Sidecar) Build(el Election, rec proxy.Recorder, refused func(why string), log *slog.Logger) error {
	s.lead = NewLeadership(el)
	s.cfg.Logger, s.cfg.Recorder = log, rec
	px, err := proxy.New(s.lead, s.cfg)
	if err != nil {
		return err
	}
	s.px = px
	s.refusals = NewRefusals(RefusalsConfig{App: s.cfg.App, Set: refused, DialTimeout: s.cfg.DialTimeout, Logger: log})
	s.lead.OnStepDown(s.refusals.StepDown)
	log.Info("forwarding the application's traffic to the leader", "mode", s.cfg.Mode, "listen", s.client.Addr().String(),
		"app", s.cfg.App, "advertise", s.Advertise, "hold_time", s.cfg.HoldTime)
	return nil
}

// Proxy is the proxy Build made: every hand-over goes through its Yield.
func (s *Sidecar) Proxy() *proxy.Proxy { return s.px }

// Held, Open, PeerConns and Buffered are the proxy's gauges, read at
// scrape time (metrics.ProxySource): its metrics exist before it does.
func (s *Sidecar) Held() int       { return s.px.Held() }
func (s *Sidecar) Open() int       { return s.px.Open() }
func (s *Sidecar) PeerConns() int  { return s.px.PeerConns() }
func (s *Sidecar) Buffered() int64 { return s.px.Buffered() }

// Watch follows the election and the application's refusals until ctx
// ends.
func (s *Sidecar) Watch(ctx context.Context) {
	go s.lead.Watch(ctx)
	go s.refusals.Run(ctx)
}

// Serve serves the proxy until StopServing, and returns an error when it
// stops before that.
func (s *Sidecar) Serve() error {
	defer close(s.done)
	err := s.px.Serve(s.sctx, s.client, s.peer)
	if s.sctx.Err() == nil {
		return fmt.Errorf("the forwarding proxy stopped: %w", err)
	}
	return err
}

// StopServing ends Serve, which gives what is in flight and held the
// drain timeout (held requests go to the new leader meanwhile), and waits
// for it, at most until ctx ends.
func (s *Sidecar) StopServing(ctx context.Context) {
	s.stop()
	select {
	case <-s.done:
	case <-ctx.Done():
	}
}

// State is the proxy's line on /leader and the status page.
func (s *Sidecar) State() api.ProxyStatus {
	st := s.px.State()
	return api.ProxyStatus{Mode: string(st.Mode), Advertise: s.Advertise, Route: st.Route, To: st.To,
		Held: st.Held, Connections: st.Connections, InFlight: st.InFlight,
		PeerConnections: st.PeerConnections, BufferedBytes: st.Buffered}
}

// TermEnd is election.Config.TermEnd: a selector's term ends through the
// proxy's Yield, as every other hand-over does.
func (s *Sidecar) TermEnd(ctx context.Context, release func(context.Context) error) error {
	return s.px.Yield(ctx, release)
}
