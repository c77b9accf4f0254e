// Package httpserver serves electd's HTTP API (the router internal/httpapi
// builds) the way docs/design/http-contract.md's "HTTP API" bounds it: HTTP/1.1 with
// fixed header and write limits, at most http.max_connections connections
// (connLimit evicts the idlest of the busiest client rather than refusing
// a probe; Held tells it which requests its caps bound), TLS from a
// certificate that may rotate, its error log throttled, and the server's
// own metrics.
package httpserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/httpapi"
	"github.com/electd/electd/internal/logging"
	"github.com/electd/electd/internal/metrics"
)

// Fixed limits of the HTTP server. A request is a few hundred bytes (the
// longest header is a bearer token), so 8 KiB of headers is plenty; net/http
// reads at most 4 KiB more before it answers 431.
const (
	maxHeaderBytes    = 8 << 10
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = time.Minute
	// drainTimeout bounds how long Stop waits for requests in flight
	// before it closes the remaining connections.
	drainTimeout = 2 * time.Second
)

// Config is what the server is built from, apart from its handler.
type Config struct {
	// MaxConnections is http.max_connections, validated by
	// internal/config.
	MaxConnections int
	// GetCertificate serves TLS with the certificate it returns (a
	// *config.KeyPair's, reloaded as its files rotate); nil serves plain
	// HTTP.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// Registry gets the server's own metrics, labelled with the election
	// Path.
	Registry     prometheus.Registerer
	Path         string
	DroppedLines func() uint64 // log lines lost (logging.AsyncWriter.Dropped)
	// Logger gets the server's errors, throttled.
	Logger *slog.Logger
	Clock  clock.Clock // of the error log's throttle; default clock.Real()
}

// Server is the API's server: the http.Server, the connection limit it
// serves through, and the TLS listener when there is one.
type Server struct {
	srv   *http.Server
	limit *connLimit
	ln    net.Listener // limit, under TLS when configured
}

// New builds the HTTP server of h (the API's router, httpapi.NewRouter,
// whose Options.Held is Held) on ln: at most c.MaxConnections connections,
// the server's own metrics on c.Registry. Requests' contexts derive from
// ctx, so cancelling it ends streams and long polls.
func New(ctx context.Context, ln net.Listener, h http.Handler, c Config) *Server {
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	limit := newConnLimit(ln, c.MaxConnections, func() {})
	sm := metrics.NewServer(c.Registry, c.Path, limit.Open, c.DroppedLines)
	limit.evicted = sm.ConnectionEvicted
	errLog := slog.New(logging.NewThrottle(c.Logger.Handler(), logging.RequestLogEvery, c.Clock, false))
	return newServer(ctx, limit, h, c.GetCertificate, errLog)
}

// newServer serves h through limit,
// under TLS when getCert is set.
func newServer(ctx context.Context, limit *connLimit, h http.Handler, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error), log *slog.Logger) *Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true) // the connection tracking assumes one request at a time per connection
	s := &Server{limit: limit, ln: limit}
	s.srv = &http.Server{
		Handler:           limit.track(h),
		Protocols:         &protocols,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: readHeaderTimeout,
		// No ReadTimeout: no endpoint reads a body (httpapi refuses them)
		// but POST /candidacy, which bounds its own read, and a ReadTimeout
		// would end /events streams and long polls.
		WriteTimeout: httpapi.WriteTimeout,
		IdleTimeout:  idleTimeout,
		ConnContext:  connContext,
		BaseContext:  func(net.Listener) context.Context { return ctx },
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if getCert != nil {
		s.ln = tls.NewListener(limit, &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: getCert,
			NextProtos:     []string{"http/1.1"},
		})
	}
	return s
}

// Addr is the address the server listens on: with http.addr's port 0, the
// port the system chose.
func (s *Server) Addr() net.Addr { return s.limit.Addr() }

// Serve serves until Stop; it returns nil after Stop.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); err != http.ErrServerClosed {
		return fmt.Errorf("http server: %w", err)
	}
	return nil
}

// Stop lets requests in flight finish for at most drainTimeout (and never
// past ctx), then closes every connection left: a client that holds a
// request open never makes shutdown wait (docs/design/session-and-faults.md, "Process").
func (s *Server) Stop(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
}

// LogCertReload returns a config.KeyPair.OnReload that logs each change of
// the API's certificate files.
func LogCertReload(log *slog.Logger) func(*tls.Certificate, error) {
	return func(cert *tls.Certificate, err error) {
		if err != nil {
			log.Warn("TLS files changed but do not load; serving the last good certificate", "err", err)
			return
		}
		var attrs []any
		if leaf, perr := x509.ParseCertificate(cert.Certificate[0]); perr == nil {
			attrs = []any{"subject", leaf.Subject.String(), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339)}
		}
		log.Info("TLS certificate reloaded", attrs...)
	}
}
