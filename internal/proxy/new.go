package proxy

import (
	"context"
	"errors"
)

// New validates cfg and returns a Proxy routing by lead; Serve runs it.
func New(lead Leadership, cfg Config) (*Proxy, error) {
	if lead == nil {
		return nil, errors.New("proxy: nil Leadership")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	pt, err := newPeerTLS(cfg.PeerKey)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		peerTLS: pt,
		cfg:     cfg, lead: lead, clock: cfg.Clock, rec: cfg.Recorder,
		log:    cfg.Logger.With("proxy", string(cfg.Mode)),
		closed: make(chan struct{}),
		probe:  newRouteProbe(cfg.Clock, cfg.Logger.With("proxy", string(cfg.Mode), "app", cfg.App)), budget: budget{clock: cfg.Clock}, jitter: jitter,
	}
	p.kept.Store(keptBudget)
	now := func() int64 { return p.clock.Now().UnixNano() }
	p.conns = newConnLimit(cfg.MaxConnections, cfg.Mode == ModeHTTP, p.rec, now)
	p.peers = newConnLimit(cfg.MaxPeerConnections, cfg.Mode == ModeHTTP, p.rec, now)
	if cfg.Mode == ModeHTTP {
		// Strict framing on both ports; a head may take what net/http
		// reads of it (its limit plus 4 KiB).
		p.conns.framing, p.peers.framing = cfg.MaxHeaderBytes+4<<10, MaxHeaderBytes+4<<10
	}
	p.stopping, p.stop = context.WithCancel(context.Background())
	if cfg.Mode == ModeTCP {
		p.tcp = &tcpProxy{p: p}
	} else {
		p.http = newHTTPProxy(p)
	}
	return p, nil
}
