package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/httpapi"
	"github.com/electd/electd/internal/logging"
	"github.com/electd/electd/internal/metrics"
)

// serverOptions are the HTTP server's caps: the config keys
// http.max_connections, http.max_streams and http.max_waiters, validated
// with the configuration (internal/config; docs/DESIGN.md, "HTTP API").
type serverOptions struct {
	// MaxConnections caps open connections; a newcomer at the cap evicts
	// an idle one (see connLimit).
	MaxConnections int
	// MaxStreams caps /events clients.
	MaxStreams int
	// MaxWaiters caps waiting ?wait= long polls.
	MaxWaiters int
}

// serverOptionsFor takes the HTTP server's options from cfg.
func serverOptionsFor(cfg *Config) serverOptions {
	return serverOptions{MaxConnections: cfg.HTTP.MaxConnections, MaxStreams: cfg.HTTP.MaxStreams, MaxWaiters: cfg.HTTP.MaxWaiters}
}

// Fixed limits of the HTTP server. A request is a few hundred bytes (the
// longest header is a bearer token), so 8 KiB of headers is plenty; net/http
// reads at most 4 KiB more before it answers 431.
const (
	maxHeaderBytes    = 8 << 10
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = time.Minute
	// httpDrain bounds how long shutdown waits for requests in flight
	// before it closes the remaining connections.
	httpDrain = 2 * time.Second
)

// httpServer is the API's server: the http.Server, the connection limit it
// serves through, and the TLS pair when there is one.
type httpServer struct {
	srv   *http.Server
	limit *connLimit
	ln    net.Listener // limit, under TLS when configured
}

// newHTTPServer serves api (whose Options.Held is limit.held) through
// limit, under TLS with certs unless certs is nil. Requests' contexts
// derive from base, so cancelling it ends streams and long polls.
func newHTTPServer(limit *connLimit, api http.Handler, certs *config.KeyPair, base context.Context, log *slog.Logger) *httpServer {
	var protocols http.Protocols
	protocols.SetHTTP1(true) // the connection tracking assumes one request at a time per connection
	s := &httpServer{limit: limit, ln: limit}
	s.srv = &http.Server{
		Handler:           limit.track(api),
		Protocols:         &protocols,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: readHeaderTimeout,
		// No ReadTimeout: no endpoint reads a body (httpapi refuses them)
		// but POST /candidacy, which bounds its own read, and a ReadTimeout
		// would end /events streams and long polls.
		WriteTimeout: httpapi.WriteTimeout,
		IdleTimeout:  idleTimeout,
		ConnContext:  connContext,
		BaseContext:  func(net.Listener) context.Context { return base },
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if certs != nil {
		s.ln = tls.NewListener(limit, &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: certs.GetCertificate,
			NextProtos:     []string{"http/1.1"},
		})
	}
	return s
}

// serve serves until stop; it returns nil after stop.
func (s *httpServer) serve() error {
	if err := s.srv.Serve(s.ln); err != http.ErrServerClosed {
		return fmt.Errorf("http server: %w", err)
	}
	return nil
}

// stop lets requests in flight finish for at most httpDrain (and never past
// ctx), then closes every connection left: a client that holds a request
// open never makes shutdown wait (docs/DESIGN.md, "Process").
func (s *httpServer) stop(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, httpDrain)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
}

// apiConfig is what the HTTP API is built from, apart from the election.
type apiConfig struct {
	opts         serverOptions
	certs        *config.KeyPair // nil: plain HTTP
	adminToken   string
	live         func() error
	reg          *prometheus.Registry // served on /metrics, gets the server's metrics
	path         string               // the election label of the metrics
	droppedLines func() uint64
	kube         func() api.KubeStatus // the label mirror's state for /leader, or nil
	log          *slog.Logger
	candidacy    httpapi.Candidacy     // GET/POST /candidacy
	switchover   httpapi.Switcher      // POST /leader/release?to=
	history      httpapi.HistoryReader // GET /history
}

// newAPIServer builds the HTTP server of el on ln: the API within the
// caps, request logs throttled, the server's own metrics on reg. Its
// requests end when base is cancelled.
func newAPIServer(ln net.Listener, el httpapi.Election, c apiConfig, base context.Context) *httpServer {
	limit := newConnLimit(ln, c.opts.MaxConnections, func() {})
	sm := metrics.NewServer(c.reg, c.path, limit.Open, c.droppedLines)
	limit.evicted = sm.ConnectionEvicted
	reqLog := slog.New(logging.NewThrottle(c.log.Handler(), logging.RequestLogEvery, clock.Real(), true))
	errLog := slog.New(logging.NewThrottle(c.log.Handler(), logging.RequestLogEvery, clock.Real(), false))
	api := httpapi.NewRouter(el, httpapi.Options{
		AdminToken: c.adminToken,
		Metrics:    promhttp.HandlerFor(c.reg, promhttp.HandlerOpts{Registry: c.reg}),
		Live:       c.live,
		Logger:     reqLog,
		MaxStreams: c.opts.MaxStreams,
		MaxWaiters: c.opts.MaxWaiters,
		Held:       limit.held,
		Refused:    sm.RequestRefused,
		Candidacy:  c.candidacy,
		Switchover: c.switchover,
		Kubernetes: c.kube,
		History:    c.history,
	})
	return newHTTPServer(limit, api, c.certs, base, errLog)
}
