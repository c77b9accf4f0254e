package forward

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/listenhold"
	"github.com/electd/electd/internal/proxy"
)

// Sidecar is the forwarding proxy as electd runs it (docs/design/proxy.md,
// "Forwarding"): its ports, bound before anything touches ZooKeeper; the
// proxy on the election's Leadership; the refusals that withdraw this
// participant while its application refuses connections. Listen, then
// Build, then Watch and Serve; HandOver and StopServing at shutdown.
//
// Without proxy.listen the Sidecar is disabled: it binds nothing,
// publishes no address, has no metrics, serves nothing, and its Yield
// and HandOver run what they are given and nothing else.
type Sidecar struct {
	on           bool
	cfg          proxy.Config
	advertise    string // what peers dial, as published
	px           *proxy.Proxy
	el           Election
	lead         *Leadership
	refusals     *refusals
	log          *slog.Logger
	client, peer net.Listener
	held         bool            // the ports came from, or went to, electd hold-listener (listen_hold_dir)
	sctx         context.Context // Serve's; StopServing ends it
	stop         context.CancelFunc
	done         chan struct{} // closed when Serve has returned
}

// Listen binds cfg's ports (cfg.Listeners), or returns a disabled Sidecar
// when cfg.Listen is empty. advertise is proxy.advertise as internal/config
// derived it; a port 0 there stands for the port bound. With hold
// (listen_hold_dir; nil without) the ports come from the holder when it
// keeps them, and it gets copies of those bound here (package listenhold).
// The caller closes hold.
func Listen(cfg proxy.Config, advertise string, hold *listenhold.Holder) (*Sidecar, error) {
	s := &Sidecar{cfg: cfg, done: make(chan struct{}), log: slog.New(slog.DiscardHandler)}
	s.sctx, s.stop = context.WithCancel(context.Background())
	if cfg.Listen == "" {
		close(s.done)
		return s, nil
	}
	client, peer, err := listeners(cfg, hold)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on proxy.listen or proxy.peer_listen: %w", err)
	}
	s.on, s.client, s.peer, s.held = true, client, peer, hold != nil
	s.advertise = withPort(advertise, s.bound())
	return s, nil
}

// listeners binds cfg's ports, or takes them from hold.
func listeners(cfg proxy.Config, hold *listenhold.Holder) (client, peer net.Listener, err error) {
	if hold == nil {
		return cfg.Listeners()
	}
	ctx := context.Background()
	if client, err = hold.Acquire(ctx, cfg.Listen); err != nil {
		return nil, nil, err
	}
	if peer, err = hold.Acquire(ctx, cfg.PeerListen); err != nil {
		client.Close()
		return nil, nil, err
	}
	return client, peer, nil
}

// bound is the address peers reach: the peer port, in both modes.
func (s *Sidecar) bound() net.Addr { return s.peer.Addr() }

// withPort is advertise with port 0 replaced by bound's.
func withPort(advertise string, bound net.Addr) string {
	host, port, err := net.SplitHostPort(advertise)
	if err != nil || port != "0" {
		return advertise
	}
	_, got, err := net.SplitHostPort(bound.String())
	if err != nil {
		return advertise
	}
	return net.JoinHostPort(host, got)
}

// Enabled says whether proxy.listen is set: only then does the Sidecar
// serve, and have metrics.
func (s *Sidecar) Enabled() bool { return s.on }

// ChecksApp says whether this participant publishes whether its
// application is up (the proxy's view of it: docs/design/handover.md, "Handoff"):
// only a working Sidecar does.
func (s *Sidecar) ChecksApp() bool { return s.on }

// Advertise is the address the election publishes for peers
// (election.Config.Proxy): "" when disabled.
func (s *Sidecar) Advertise() string { return s.advertise }

// TermEnd is election.Config.TermEnd: a selector's term ends through the
// proxy's Yield, as every other hand-over does; nil when disabled.
func (s *Sidecar) TermEnd() func(ctx context.Context, release func(context.Context) error) error {
	if !s.on {
		return nil
	}
	return s.Yield
}

// Close releases the ports of a Sidecar that never served.
func (s *Sidecar) Close() {
	if !s.on {
		return
	}
	_ = s.client.Close()
	_ = s.peer.Close()
}

// Build makes the proxy on el, counting to rec (metrics.Proxy, built on
// this Sidecar only when Enabled); its step-downs withdraw this
// participant through refused (the candidacy's SetAppRefused) until the
// application takes connections again, and what it sees of the
// application is published with el.SetAppUp. It does nothing when
// disabled.
func (s *Sidecar) Build(el Election, rec proxy.Recorder, refused func(why string), log *slog.Logger) error {
	if !s.on {
		return nil
	}
	s.el, s.lead, s.log = el, NewLeadership(el), log
	s.cfg.Logger, s.cfg.Recorder = log, rec
	px, err := proxy.New(s.lead, s.cfg)
	if err != nil {
		return err
	}
	s.px = px
	set := func(why string) {
		refused(why)
		el.SetAppUp(why == "")
	}
	s.refusals = newRefusals(refusalsConfig{App: s.cfg.App, Set: set, DialTimeout: s.cfg.DialTimeout, Logger: log})
	s.lead.OnStepDown(s.refusals.StepDown)
	log.Info("forwarding the application's traffic to the leader", "mode", s.cfg.Mode, "listen", s.client.Addr().String(),
		"peer_listen", s.peer.Addr().String(), "app", s.cfg.App, "advertise", s.advertise, "hold_time", s.cfg.HoldTime,
		"listen_held", s.held)
	return nil
}

// Yield is the proxy's graceful hand-over (proxy.Proxy.Yield): it stops
// handing traffic to the application, waits for what it has (bounded),
// runs f and routes again. Disabled, it runs f.
func (s *Sidecar) Yield(ctx context.Context, f func(context.Context) error) error {
	if !s.on {
		return f(ctx)
	}
	return s.px.Yield(ctx, f)
}

// Held, Open, PeerConns and Buffered are the proxy's gauges, read at
// scrape time (metrics.ProxySource): its metrics exist before it does.
func (s *Sidecar) Held() int       { return s.px.Held() }
func (s *Sidecar) Open() int       { return s.px.Open() }
func (s *Sidecar) PeerConns() int  { return s.px.PeerConns() }
func (s *Sidecar) Buffered() int64 { return s.px.Buffered() }

// Watch follows the election and the application's refusals until ctx
// ends, says when the application first takes a connection (Probe), and
// gives back the memory a burst of traffic left once the proxy is quiet.
func (s *Sidecar) Watch(ctx context.Context) {
	if !s.on {
		return
	}
	go s.lead.Watch(ctx)
	go s.refusals.Run(ctx)
	go s.refusals.Probe(ctx)
	c := s.cfg.Clock
	if c == nil {
		c = clock.Real()
	}
	go trimWhenQuiet(ctx, c, s.px.Served, freeMemory)
}

// Serve serves the proxy until StopServing, and returns an error when it
// stops before that. Disabled, it returns nil at once.
func (s *Sidecar) Serve() error {
	if !s.on {
		return nil
	}
	defer close(s.done)
	err := s.px.Serve(s.sctx, s.client, s.peer)
	if s.sctx.Err() == nil {
		return fmt.Errorf("the forwarding proxy stopped: %w", err)
	}
	return err
}

// HandOver is the start of the shutdown (docs/design/session-and-faults.md, "Process"):
// stop answers 503 and stops exec mode's command. With a proxy it runs in
// the proxy's Yield, and this participant then withdraws, so that
// election.handoff picks its successor now and the held requests go to
// it; it stays an observer, forwarding, until shutdown ends. Disabled,
// stop runs and leadership stays until the shutdown resigns.
func (s *Sidecar) HandOver(ctx context.Context, stop func(context.Context)) {
	if !s.on {
		stop(ctx)
		return
	}
	err := s.px.Yield(ctx, func(ctx context.Context) error {
		stop(ctx)
		return s.el.SetCandidate(ctx, false, election.LossShutdown)
	})
	if err != nil {
		s.log.Warn("could not hand over before shutting down; resigning instead", "err", err)
	}
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

// State is the proxy's line on /leader and the status page; nil when
// disabled.
func (s *Sidecar) State() *api.ProxyStatus {
	if !s.on {
		return nil
	}
	st := s.px.State()
	return &api.ProxyStatus{Mode: string(st.Mode), Advertise: s.advertise, Route: st.Route, To: st.To,
		Held: st.Held, Connections: st.Connections, InFlight: st.InFlight,
		PeerConnections: st.PeerConnections, BufferedBytes: st.Buffered}
}
