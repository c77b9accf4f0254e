package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/electd/electd/internal/logging"
)

// appIdleTimeout closes a kept-alive connection to the application idle
// this long (or IdleTimeout, when shorter): shorter than common
// application servers' own keep-alive timeouts (Node's is 5 s), so that the
// proxy closes an idle connection before the application does rather than
// racing its close with a request.
const appIdleTimeout = 4 * time.Second

// maxIdlePerHost bounds the kept-alive HTTP/1 connections to the
// application and to each peer's proxy (upgrades).
const maxIdlePerHost = 64

// expectContinueWait is how long a request that asks the application for
// 100 Continue (the client's own Expect, or ResendUnreadBody's) waits for
// it before its body is sent anyway.
const expectContinueWait = time.Second

func newHTTPProxy(p *Proxy) *httpProxy {
	cfg := p.cfg
	h := &httpProxy{p: p, appURL: &url.URL{Scheme: "http", Host: cfg.App}, buffers: newBuffers(cfg.BufferTotal),
		warn: logging.RequestLog(p.log, p.clock)}
	h.app = newTransport(cfg, cfg.ResponseTimeout, min(appIdleTimeout, cfg.IdleTimeout), false)
	h.appDirect = newAppClient(cfg.App, h.app.DialContext, cfg.ResponseTimeout, min(appIdleTimeout, cfg.IdleTimeout), maxIdlePerHost, MaxHeaderBytes)
	h.appH2 = newTransport(cfg, cfg.ResponseTimeout, min(appIdleTimeout, cfg.IdleTimeout), true)
	// The leader's proxy may hold a request up to the hold time before it
	// hands it to its application.
	h.peerH1 = newTransport(cfg, cfg.HoldTime+cfg.DialTimeout+cfg.ResponseTimeout, cfg.IdleTimeout/2, false)
	// HTTP/1.1 inside the peers' mutual TLS (peertls.go): the transport
	// sees a plain connection.
	h.peerH1.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
		return p.dialPeer(ctx, addr, alpnHTTP1)
	}
	h.pool = newPeerPool(p)
	h.check = newChecker(cfg)
	// flushEvery: what an answer writes reaches the client within a few
	// milliseconds, streamed or not (the server's buffer would otherwise
	// keep the first 4 KiB of a slow answer, headers included, from the
	// client); ReverseProxy flushes answers of unknown length (gRPC) and
	// event streams at once by itself.
	h.errLog, h.copyBuffers = slog.NewLogLogger(p.log.Handler(), slog.LevelDebug), &bufferPool{}
	return h
}

func newTransport(cfg Config, headers, idle time.Duration, h2 bool) *http.Transport {
	var protocols http.Protocols
	if h2 {
		protocols.SetUnencryptedHTTP2(true)
	} else {
		protocols.SetHTTP1(true)
	}
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 15 * time.Second}
	return &http.Transport{
		DialContext:            dialApp(d),
		Protocols:              &protocols,
		MaxIdleConns:           4 * maxIdlePerHost,
		MaxIdleConnsPerHost:    maxIdlePerHost,
		IdleConnTimeout:        idle,
		ResponseHeaderTimeout:  headers,
		ExpectContinueTimeout:  expectContinueWait,
		DisableCompression:     true, // relay the bytes as they are
		MaxResponseHeaderBytes: MaxHeaderBytes,
		// Proxy is nil: never an HTTP_PROXY from the environment.
	}
}

// serve serves clients on client and peers on peer until ctx ends, then
// drains (docs/design/proxy.md, "Forwarding": shutdown).
func (h *httpProxy) serve(ctx context.Context, client, peer net.Listener) error {
	p := h.p
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	// The client port: plain HTTP/1.1 requests on h1Server's own loop,
	// every other connection on net/http's server (h1.go).
	clientSrv := h.server(http.HandlerFunc(h.serveClient), p.conns, p.cfg.MaxHeaderBytes, 0, base)
	h1, next := newH1Server(clientSrv, client, base, p.log)
	srvs := []server{h1, clientSrv,
		h.server(http.HandlerFunc(h.servePeer), p.peers, MaxHeaderBytes, p.cfg.PeerStreams, base),
	}
	served := make(chan error, len(srvs))
	for i, ln := range []net.Listener{client, next, peer} {
		go func() { served <- srvs[i].Serve(ln) }()
	}
	left := len(srvs)
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		left--
	}
	// Take no more connections, and let what is in flight finish within
	// DrainTimeout, held requests included: a leader that handed over
	// before it stops (Yield) forwards them to the new leader meanwhile.
	drained, cancel := context.WithCancel(context.Background())
	t := p.clock.AfterFunc(p.cfg.DrainTimeout, cancel)
	shutdownAll(drained, srvs)
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
	if shutdownAll(answered, srvs) != nil {
		for _, s := range srvs {
			_ = s.Close()
		}
	}
	t.Stop()
	cancel()
	p.conns.closeAll()
	p.peers.closeAll()
	for ; left > 0; left-- {
		if e := <-served; err == nil {
			err = e
		}
	}
	h.active.Wait()
	p.checks.Wait()
	h.app.CloseIdleConnections()
	h.appDirect.close()
	h.appH2.CloseIdleConnections()
	h.peerH1.CloseIdleConnections()
	h.pool.close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// server is one port's http.Server: HTTP/1.1 and HTTP/2 with prior
// knowledge, connections counted by l. streams caps an HTTP/2
// connection's concurrent requests (0: net/http's default).
func (h *httpProxy) server(handler http.Handler, l *connLimit, maxHeader, streams int, base context.Context) *http.Server {
	p := h.p
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	h2 := &http.HTTP2Config{MaxConcurrentStreams: streams}
	if l == p.peers {
		h2 = peerWindows(p.cfg, streams)
	}
	return &http.Server{
		Handler:           handler,
		Protocols:         &protocols,
		HTTP2:             h2,
		MaxHeaderBytes:    maxHeader,
		ReadHeaderTimeout: p.cfg.ClientHeaderTimeout,
		// No ReadTimeout or WriteTimeout: they would end streams and
		// upgrades; the guard bounds each pause instead, and a buffered
		// body has its own total (buffer.go).
		IdleTimeout: p.cfg.IdleTimeout,
		ConnState:   l.connState(h.tunnelGuard),
		ConnContext: connContext,
		BaseContext: func(net.Listener) context.Context { return base },
		ErrorLog:    slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
		// Every request reaches the handler, "OPTIONS *" too, so that the
		// framing check sees each in turn (optionsStar).
		DisableGeneralOptionsHandler: true,
	}
}

// server is a port's server: net/http's, or h1Server.
type server interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

// shutdownAll shuts the servers down at once, within ctx.
func shutdownAll(ctx context.Context, srvs []server) error {
	errs := make(chan error, len(srvs))
	for _, s := range srvs {
		go func() { errs <- s.Shutdown(ctx) }()
	}
	var err error
	for range srvs {
		if e := <-errs; e != nil {
			err = e
		}
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
