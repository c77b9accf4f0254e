package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/forward"
	"github.com/electd/electd/internal/history"
	"github.com/electd/electd/internal/httpserver"
	"github.com/electd/electd/internal/kube"
	"github.com/electd/electd/internal/logging"
	"github.com/electd/electd/internal/metrics"
)

// daemon is one electd: built by newDaemon, run by serve, stopped by shutdown.
type daemon struct {
	cfg            *config.Loaded
	log            *slog.Logger
	logs           *logging.AsyncWriter
	signals        []os.Signal // that stop it, see stopSignals
	sess           *election.Session
	el             *election.Elector
	http           *httpserver.Server
	kube           *kube.Labeler      // nil unless a leader label or Lease is configured
	cancelRequests context.CancelFunc // ends long polls and /events streams
	follow         *following         // app health, candidacy, exec mode (follow.go)
	history        *history.Log       // GET /history and the status page, fed by serve
	fwd            *forward.Sidecar   // the forwarding proxy; nil without proxy.listen
}

// newDaemon listens, starts the ZooKeeper session and builds the election
// and the HTTP server. Listening comes first: a taken port fails before
// anything touches ZooKeeper.
func newDaemon(cfg *config.Loaded, environ []string, logs *logging.AsyncWriter, log *slog.Logger) (*daemon, error) {
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on http.addr: %w", err)
	}
	fwd, err := listenProxy(cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	path := cfg.Prepared.Election.Path // with the chroot
	// The elector adds path and id to its lines itself; the rest get them here.
	d := &daemon{cfg: cfg, log: log.With("path", path, "id", cfg.ID), logs: logs, fwd: fwd}
	// What follows frees the listeners when it fails.
	fail := func(err error) (*daemon, error) {
		ln.Close()
		if fwd != nil {
			fwd.Close()
		}
		if d.sess != nil {
			d.sess.Close()
		}
		return nil, err
	}
	// With http.addr's port 0 the system picks the port: this line, and
	// electd run's ELECTD_HTTP_ADDR, say which.
	d.log.Info("starting electd", "version", version, "commit", commit, "mode", cfg.Election.Mode,
		"servers", cfg.ZooKeeper.Servers, "auth", cfg.ZooKeeper.Auth != "", "http_addr", ln.Addr().String(),
		"tls", cfg.Prepared.HTTPCert != nil, "max_connections", cfg.HTTP.MaxConnections)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// d.el is set below, before the server that scrapes exists.
	m := metrics.New(reg, path, metrics.StatusFunc(func() election.Status { return d.el.Status() }), buildInfo())

	sc := cfg.Prepared.Session
	sc.Logger, sc.Recorder = d.log, m
	if d.sess, err = election.Connect(sc); err != nil {
		return fail(err)
	}
	ec := cfg.Prepared.Election
	ec.Logger, ec.Recorder = log, m
	ec.Observer = startsObserver(cfg)
	if fwd != nil {
		ec.Proxy, ec.TermEnd = fwd.Advertise, fwd.TermEnd
	}
	if d.el, err = election.New(d.sess, ec); err != nil {
		return fail(err)
	}
	metrics.CountWork(reg, path, d.el.Counters)
	if d.kube, err = newKube(cfg.Prepared.Kube, d.el, m, d.log); err != nil {
		return fail(err)
	}
	var yielder forward.Yielder
	if fwd != nil {
		// The candidacy exists once newFollowing returns, before anything
		// serves: only then can the proxy ask it to withdraw.
		refused := func(why string) { d.follow.cand.SetAppRefused(why) }
		if err := fwd.Build(d.el, metrics.NewProxy(reg, path, fwd), refused, d.log); err != nil {
			return fail(err)
		}
		yielder = fwd.Proxy()
	}
	d.follow = newFollowing(cfg, environ, boundAddr(cfg.HTTP.Addr, ln.Addr()), d.el, yielder, reg, d.log)
	apiEl, switcher := d.follow.api()
	d.history = history.New(history.DefaultSize, clock.Real())

	reqCtx, cancel := context.WithCancel(context.Background())
	d.cancelRequests = cancel
	hc := httpserver.Config{
		MaxConnections: cfg.HTTP.MaxConnections, MaxStreams: cfg.HTTP.MaxStreams, MaxWaiters: cfg.HTTP.MaxWaiters,
		AdminToken: cfg.HTTP.AdminToken, Live: d.live, Registry: reg, Path: path,
		DroppedLines: logs.Dropped, Logger: d.log, Candidacy: d.follow, Switchover: switcher, History: d.history,
	}
	if certs := cfg.Prepared.HTTPCert; certs != nil {
		hc.GetCertificate = certs.GetCertificate
	}
	if d.kube != nil {
		hc.Kubernetes = d.kube.Status
	}
	if fwd != nil {
		hc.Proxy = fwd.State
	}
	d.http = httpserver.New(reqCtx, ln, apiEl, hc)
	return d, nil
}

// listenProxy binds the forwarding proxy's ports, before anything touches
// ZooKeeper, and derives the address to publish (a port 0 in
// proxy.advertise stands for the port bound); nil without proxy.listen.
func listenProxy(cfg *config.Loaded) (*forward.Sidecar, error) {
	pc := cfg.Prepared.Proxy
	if pc.Listen == "" {
		return nil, nil
	}
	s, err := forward.Listen(pc)
	if err != nil {
		return nil, err
	}
	s.Advertise = config.ProxyAdvertise(cfg.Prepared.Election.Proxy, s.Bound())
	return s, nil
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

// serve runs the election and the HTTP server until a signal or a failure,
// then shuts down as docs/DESIGN.md's "Process" says.
func serve(cfg *config.Loaded, environ []string, logs *logging.AsyncWriter, log *slog.Logger) int {
	sigs := stopSignals()
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	// exec.on_exit: exit ends electd as a signal does.
	ctx, quit := context.WithCancel(ctx)
	defer quit()
	d, err := newDaemon(cfg, environ, logs, log)
	if err != nil {
		log.Error("electd cannot start", "err", err)
		return 1
	}
	d.signals = sigs

	// The election outlives the signal: shutdown resigns it after the grace.
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	g, gctx := errgroup.WithContext(ctx)
	d.runKube(runCtx)
	g.Go(d.http.Serve)
	if d.fwd != nil {
		// The proxy follows the election until the end of shutdown: a
		// participant that handed over forwards as an observer meanwhile.
		d.fwd.Watch(runCtx)
		g.Go(d.fwd.Serve)
	}
	g.Go(func() error {
		d.follow.run(runCtx, quit)
		return nil
	})
	g.Go(func() error {
		d.history.Feed(d.el.Observe(runCtx)) // until the election stops
		return nil
	})
	g.Go(func() error {
		err := d.el.Run(runCtx)
		if ctx.Err() == nil {
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
	return d.follow.status()
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
	if d.sess.State() == election.StateClosed {
		return errors.New("zookeeper session closed")
	}
	return nil
}
