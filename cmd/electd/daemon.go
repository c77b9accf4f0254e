package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/follow"
	"github.com/electd/electd/internal/forward"
	"github.com/electd/electd/internal/history"
	"github.com/electd/electd/internal/httpapi"
	"github.com/electd/electd/internal/httpserver"
	"github.com/electd/electd/internal/kube"
	"github.com/electd/electd/internal/listenhold"
	"github.com/electd/electd/internal/logging"
	"github.com/electd/electd/internal/metrics"
	"github.com/electd/electd/internal/proxy"
	"github.com/electd/electd/internal/sessionfile"
)

// daemon is one electd: built by newDaemon, run by serve, stopped by
// shutdown. Every part is there, working or off: the forwarding proxy
// without proxy.listen, the Kubernetes mirror without a label or Lease.
type daemon struct {
	cfg            *config.Loaded
	log            *slog.Logger
	logs           *logging.AsyncWriter
	signals        []os.Signal        // that stop it, see stopSignals
	hold           *listenhold.Holder // listen_hold_dir's: electd hold-listener keeps the ports; nil when off
	sess           *zksession.Session
	sessFile       *sessionfile.File // zookeeper.session_file, locked for the process's life; nil when off
	resumed        bool              // sess resumed the session kept in sessFile
	el             *election.Elector
	side           *forward.Sidecar // the forwarding proxy
	kube           *kube.Labeler    // the leader label and Lease mirror
	gate           *kube.Gate       // the pod condition electd.io/participant
	app            *follow.App      // app health, candidacy, exec mode
	history        *history.Log     // GET /history and the status page, fed by serve
	http           *httpserver.Server
	cancelRequests context.CancelFunc // ends long polls and /events streams
}

// newDaemon listens, starts the ZooKeeper session and builds the election,
// the parts that follow it and the HTTP server. Listening comes first: a
// taken port fails before anything touches ZooKeeper.
func newDaemon(cfg *config.Loaded, logs *logging.AsyncWriter, log *slog.Logger) (*daemon, error) {
	p := cfg.Prepared
	hold, ln, err := listenAPI(cfg, log)
	if err != nil {
		return nil, err
	}
	side, err := forward.Listen(p.Proxy, p.Election.Proxy, hold)
	if err != nil {
		ln.Close()
		closeHold(hold)
		return nil, err
	}
	// The elector adds path and id to its lines itself; the rest get them here.
	d := &daemon{cfg: cfg, log: log.With("path", p.Election.Path, "id", cfg.ID), logs: logs, side: side, hold: hold}
	// With http.addr's port 0 the system picks the port: this line, and
	// electd run's ELECTD_HTTP_ADDR, say which.
	d.log.Info("starting electd", "version", version, "commit", commit, "mode", cfg.Election.Mode,
		"servers", cfg.ZooKeeper.Servers, "auth", cfg.ZooKeeper.Auth != "", "http_addr", ln.Addr().String(),
		"tls", p.HTTPCert != nil, "max_connections", cfg.HTTP.MaxConnections, "listen_held", hold != nil)
	reg := metrics.NewRegistry()
	m := metrics.New(reg, p.Election.Path, buildInfo())
	sc := p.Session
	sc.Logger, sc.Recorder = d.log, m
	d.sessFile = resumeFrom(cfg, &sc, d.log)
	if d.sess, err = zksession.Connect(sc); err == nil {
		d.resumed = resumed(d.sess, sc, d.log)
		err = d.build(log, m, reg, boundAddr(cfg.HTTP.Addr, ln.Addr()))
		if err != nil {
			d.sess.Close()
		}
	}
	if err != nil {
		ln.Close()
		side.Close()
		closeHold(hold)
		return nil, err
	}
	d.serveAPI(ln, reg)
	return d, nil
}

// listenAPI binds http.addr. With listen_hold_dir it opens the directory
// shared with electd hold-listener and takes the socket the holder kept,
// so that a probe sent while electd restarts waits for it
// (docs/design/kubernetes.md, "A crashed electd's ports").
func listenAPI(cfg *config.Loaded, log *slog.Logger) (*listenhold.Holder, net.Listener, error) {
	if cfg.ListenHoldDir == "" {
		ln, err := net.Listen("tcp", cfg.HTTP.Addr)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot listen on http.addr: %w", err)
		}
		return nil, ln, nil
	}
	hold, err := listenhold.Open(cfg.ListenHoldDir, listenhold.RoleElectd, log)
	if err != nil {
		return nil, nil, fmt.Errorf("listen_hold_dir: %w", err)
	}
	ln, err := hold.Acquire(context.Background(), cfg.HTTP.Addr)
	if err != nil {
		hold.Close()
		return nil, nil, fmt.Errorf("cannot listen on http.addr: %w", err)
	}
	return hold, ln, nil
}

// closeHold stops handing the ports over; the holder keeps its copies.
func closeHold(h *listenhold.Holder) {
	if h != nil {
		_ = h.Close()
	}
}

// build builds the election on the session and what follows it: the
// Kubernetes mirror, the application's side (follow.App) and the proxy,
// each with its metrics on reg. httpAddr is the API's address as bound,
// for electd run's command.
func (d *daemon) build(log *slog.Logger, m *metrics.Metrics, reg prometheus.Registerer, httpAddr string) error {
	p := d.cfg.Prepared
	ec := p.Election
	ec.Logger, ec.Recorder = log, m
	ec.Proxy, ec.TermEnd, ec.AppChecked = d.side.Advertise(), d.side.TermEnd(), d.side.ChecksApp()
	fc := p.Follow
	if d.resumed && ec.Observer && d.cfg.Election.Candidate {
		// Observer only for app.health_url: a resumed candidate keeps
		// standing, and its first check decides (candidacy.Config.Resumed).
		ec.Observer, fc.Standing, fc.Resumed = false, true, true
	}
	el, err := election.New(d.sess, ec)
	if err != nil {
		return err
	}
	d.el = el
	metrics.CollectStatus(reg, ec.Path, el)
	metrics.CountWork(reg, ec.Path, el.Counters)
	kc := p.Kube
	kc.Logger, kc.Recorder = d.log, m
	if d.kube, err = kube.New(kc, el); err != nil {
		return err
	}
	if d.gate, err = kube.NewGate(kc, el); err != nil {
		return err
	}
	fc.Logger, fc.Exec.HTTPAddr, fc.Health.Recorder = d.log, httpAddr, metrics.NewApp(reg, ec.Path)
	d.app = follow.New(el, d.side, fc)
	metrics.CollectApp(reg, ec.Path, d.app)
	d.history = history.New(history.DefaultSize, clock.Real())
	var rec proxy.Recorder // the proxy's metrics exist only with proxy.listen
	if d.side.Enabled() {
		rec = metrics.NewProxy(reg, ec.Path, d.side)
	}
	return d.side.Build(el, rec, d.app.SetAppRefused, d.log)
}

// serveAPI builds the HTTP API's router (docs/design/http-contract.md, "HTTP API") and
// the server it runs in on ln. The API drives the election through the
// application's side: a release lets the proxy's requests finish and
// stops electd run's command first.
func (d *daemon) serveAPI(ln net.Listener, reg *prometheus.Registry) {
	c, path := d.cfg, d.cfg.Prepared.Election.Path
	router := httpapi.NewRouter(d.app.Elector(), httpapi.Options{
		AdminToken: c.HTTP.AdminToken, Metrics: metrics.Handler(reg),
		Live: d.live, Logger: logging.RequestLog(d.log, clock.Real()),
		MaxStreams: c.HTTP.MaxStreams, MaxWaiters: c.HTTP.MaxWaiters,
		Held: httpserver.Held, Refused: metrics.NewAPI(reg, path).RequestRefused,
		Candidacy: d.app, Switchover: d.app.Elector(), History: d.history,
		Kubernetes: d.kube.Status, Proxy: d.side.State,
	})
	reqCtx, cancel := context.WithCancel(context.Background())
	d.cancelRequests = cancel
	d.http = httpserver.New(reqCtx, ln, router, httpserver.Config{
		MaxConnections: c.HTTP.MaxConnections, GetCertificate: c.Prepared.HTTPCert.CertificateFunc(),
		Evicted: metrics.NewServer(reg, path).ConnectionEvicted, Logger: d.log,
	})
	metrics.CollectServer(reg, path, d.http.Open, d.logs.Dropped)
}

// boundAddr is http.addr with the port the listener got: the same as
// configured, but for port 0 (any free port).
func boundAddr(configured string, bound net.Addr) string {
	host, _, err := net.SplitHostPort(configured)
	_, port, err2 := net.SplitHostPort(bound.String())
	if err != nil || err2 != nil {
		return bound.String()
	}
	return net.JoinHostPort(host, port)
}

// live is /healthz: the election loop runs and the session is not closed.
// Whether ZooKeeper answers or electd has a view of the election is not
// liveness (a restart would not bring ZooKeeper back): that is /readyz.
func (d *daemon) live() error {
	select {
	case <-d.el.Done():
		return errors.New("election loop stopped")
	default:
	}
	if d.sess.State() == zksession.StateClosed {
		return errors.New("zookeeper session closed")
	}
	return nil
}
