package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// Headers of the forwarding contract (docs/DESIGN.md, "Forwarding").
const (
	// HeaderFencingToken and HeaderLeaderID are set on every request the
	// leader's proxy hands to its application: the token to fence writes
	// with, and the leader's id. Copies sent by a client are removed.
	HeaderFencingToken = "Electd-Fencing-Token"
	HeaderLeaderID     = "Electd-Leader-Id"
	// HeaderHop counts the proxies that forwarded a request (1 or 2).
	HeaderHop = "Electd-Hop"
	// HeaderHold is what is left of the hold time, in milliseconds, when a
	// proxy forwards a request: the next one waits no longer, so that the
	// client is answered within the hold time it was promised.
	HeaderHold = "Electd-Hold"
	// HeaderNotLeader marks the 421 with which a proxy bounces a request
	// forwarded twice while it does not lead: unprocessed, so the proxy
	// before may route it again. Only a peer's is believed: the proxy
	// that hands requests to its application removes the header from the
	// application's answers.
	HeaderNotLeader = "Electd-Not-Leader"
)

// appIdleTimeout closes a kept-alive connection to the application idle
// this long (or IdleTimeout, when shorter): shorter than common
// application servers' own keep-alive timeouts (Node's is 5 s), so that the
// proxy closes an idle connection before the application does rather than
// racing its close with a request.
const appIdleTimeout = 4 * time.Second

// flushEvery bounds how long a part of an answer of known length waits in
// the server's buffer. Not -1 (at once): that costs a flush of the headers
// on a goroutine of its own and a write per part, which doubled what a
// small answer cost on its way through; a whole small answer leaves in one
// write when the handler returns.
const flushEvery = 5 * time.Millisecond

// maxIdlePerHost bounds the kept-alive connections to the application and
// to each peer's proxy.
const maxIdlePerHost = 64

// httpProxy is HTTP mode: net/http/httputil.ReverseProxy, one to the
// application and one to the leader's proxy. ReverseProxy brings what a
// forward must get right and a new copy would get wrong: hop-by-hop
// headers (those a Connection header names included), Upgrade
// (WebSocket) by hijacking and splicing both ways, trailers, 1xx answers,
// prompt flushing of streamed answers, and an ErrorHandler that is called
// before anything is written, so that a dial refused can be retried
// elsewhere. What it lacks (progress timeouts, the hold, the retry) is
// added around it.
type httpProxy struct {
	p             *Proxy
	appURL        *url.URL
	app, peers    *http.Transport
	toApp, toPeer *httputil.ReverseProxy
	active        sync.WaitGroup // handlers running
}

func newHTTPProxy(p *Proxy) *httpProxy {
	h := &httpProxy{p: p, appURL: &url.URL{Scheme: "http", Host: p.cfg.App}}
	h.app = newTransport(p.cfg, p.cfg.ResponseTimeout, min(appIdleTimeout, p.cfg.IdleTimeout))
	// The leader's proxy may hold a request up to the hold time before it
	// hands it to its application.
	h.peers = newTransport(p.cfg, p.cfg.HoldTime+p.cfg.DialTimeout+p.cfg.ResponseTimeout, p.cfg.IdleTimeout/2)
	errLog := slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)
	pool := &bufferPool{}
	// flushEvery: what an answer writes reaches the client within a few
	// milliseconds, streamed or not (the server's buffer would otherwise
	// keep the first 4 KiB of a slow answer, headers included, from the
	// client); ReverseProxy flushes answers of unknown length and event
	// streams at once by itself.
	h.toApp = &httputil.ReverseProxy{Rewrite: h.rewriteApp, Transport: h.app, ErrorHandler: keepError,
		ModifyResponse: h.modify, ErrorLog: errLog, BufferPool: pool, FlushInterval: flushEvery}
	h.toPeer = &httputil.ReverseProxy{Rewrite: h.rewritePeer, Transport: h.peers, ErrorHandler: keepError,
		ModifyResponse: h.modify, ErrorLog: errLog, BufferPool: pool, FlushInterval: flushEvery}
	return h
}

func newTransport(cfg Config, headers, idle time.Duration) *http.Transport {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 15 * time.Second}
	return &http.Transport{
		DialContext:            d.DialContext,
		Protocols:              &protocols,
		MaxIdleConns:           4 * maxIdlePerHost,
		MaxIdleConnsPerHost:    maxIdlePerHost,
		IdleConnTimeout:        idle,
		ResponseHeaderTimeout:  headers,
		ExpectContinueTimeout:  time.Second,
		DisableCompression:     true, // relay the bytes as they are
		MaxResponseHeaderBytes: MaxHeaderBytes,
		// Proxy is nil: never an HTTP_PROXY from the environment.
	}
}

// serve serves ln until ctx ends, then drains (docs/DESIGN.md,
// "Forwarding": shutdown).
func (h *httpProxy) serve(ctx context.Context, ln net.Listener) error {
	p := h.p
	var protocols http.Protocols
	protocols.SetHTTP1(true) // one request at a time per connection: the eviction relies on it
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &http.Server{
		Handler:           h,
		Protocols:         &protocols,
		MaxHeaderBytes:    p.cfg.MaxHeaderBytes,
		ReadHeaderTimeout: p.cfg.HeaderTimeout,
		// No ReadTimeout or WriteTimeout: they would end streams and
		// upgrades; the guard bounds each pause instead.
		IdleTimeout: p.cfg.IdleTimeout,
		ConnState:   p.conns.connState(h.tunnelGuard),
		BaseContext: func(net.Listener) context.Context { return base },
		ErrorLog:    slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		served = nil
	}
	// Take no more connections, and let what is in flight finish within
	// DrainTimeout, held requests included: a leader that handed over
	// before it stops (Yield) forwards them to the new leader meanwhile.
	drained, cancel := context.WithCancel(context.Background())
	t := p.clock.AfterFunc(p.cfg.DrainTimeout, cancel)
	_ = srv.Shutdown(drained)
	t.Stop()
	cancel()
	// What is left: held requests are answered 503 and forwards are
	// cancelled. A second Shutdown lets those answers leave (net/http
	// writes them after the handler returns) for at most closeGrace; then
	// every connection is closed, upgraded ones included, which Shutdown
	// does not track.
	p.shutdown()
	cancelBase()
	answered, cancel := context.WithCancel(context.Background())
	t = p.clock.AfterFunc(closeGrace, cancel)
	if srv.Shutdown(answered) != nil {
		_ = srv.Close()
	}
	t.Stop()
	cancel()
	p.conns.closeAll()
	if served != nil {
		err = <-served
	}
	h.active.Wait()
	h.app.CloseIdleConnections()
	h.peers.CloseIdleConnections()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// closeGrace is how long the end of Serve lets the 503s of held requests
// leave before it closes their connections.
const closeGrace = 100 * time.Millisecond

// tunnelGuard bounds an upgraded connection: closed when idle for
// IdleTimeout or when a write to it blocks for BodyTimeout.
func (h *httpProxy) tunnelGuard(c *trackedConn) *guard {
	return newGuard(h.p.clock, h.p.cfg.BodyTimeout, h.p.cfg.IdleTimeout, func(error) { _ = c.Conn.Close() })
}
