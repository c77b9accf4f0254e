// Command electd is a leader-election sidecar on Apache ZooKeeper: it joins
// one election and tells the application next to it, over HTTP and
// Prometheus, whether it leads and who does. See docs/DESIGN.md and --help.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/electd/electd/internal/cli"
	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/history"
	"github.com/electd/electd/internal/httpserver"
	"github.com/electd/electd/internal/kube"
	"github.com/electd/electd/internal/logging"
	"github.com/electd/electd/internal/metrics"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// runClient runs the client commands (internal/cli) until they are done or
// SIGINT or SIGTERM ends them.
func runClient(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Run(ctx, args, cli.Env{Stdout: stdout, Stderr: stderr, Getenv: os.Getenv, IsTerminal: cli.IsTerminal(stdout)})
}

// run returns the exit status: 0 clean, 1 runtime failure, 2 bad configuration.
func run(args []string, stdout, stderr io.Writer) int {
	// `electd status` and `electd release` talk to a running daemon.
	if cli.IsCommand(args) {
		return runClient(args, stdout, stderr)
	}
	// `electd run [FLAGS] -- CMD` is the daemon in exec mode (run.go).
	if code, ok := runGuard(args); ok {
		return code
	}
	args, execArgs := splitRun(args)
	fs, opts, err := parseFlags(args)
	if err != nil {
		return fail(stderr, err)
	}
	switch {
	case opts.help:
		printHelp(stdout)
		printSignals(stdout)
		printRunHelp(stdout)
		return 0
	case opts.version:
		printVersion(stdout)
		return 0
	}
	cfg, err := load(fs, opts.config)
	if err != nil {
		return fail(stderr, err)
	}
	if err := execArgs.apply(cfg); err != nil {
		return fail(stderr, err)
	}
	if opts.validate {
		warnUnknownEnv(logging.New(stderr, cfg.Log.Level, cfg.Log.Format))
		printEffective(stdout, cfg)
		return 0
	}

	// From here on the daemon logs through a queue that never blocks
	// (logwriter.go), and a closed stderr no longer kills it.
	survivePipes()
	logs := logging.NewAsyncWriter(stderr, logging.DroppedNotice(cfg.Log.Level, cfg.Log.Format))
	defer logs.Flush(exitFlush)
	log := logging.New(logs, cfg.Log.Level, cfg.Log.Format)
	certs := cfg.httpCert()
	if certs != nil {
		certs.OnReload = httpserver.LogCertReload(log)
	}
	warnUnknownEnv(log)
	return serve(cfg, certs, logs, log)
}

// exitFlush bounds how long the last log lines may hold the exit.
const exitFlush = 500 * time.Millisecond

func warnUnknownEnv(log *slog.Logger) {
	for _, name := range unknownEnv(os.Environ()) {
		log.Warn("ignoring unknown environment variable", "name", name)
	}
}

// fail prints the one line a bad configuration gets and returns status 2.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "electd: %s\n", strings.Join(strings.Fields(err.Error()), " "))
	return 2
}

// daemon is one electd: built by newDaemon, run by serve, stopped by shutdown.
type daemon struct {
	cfg            *Config
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
}

// newDaemon listens, starts the ZooKeeper session and builds the election
// and the HTTP server. Listening comes first: a taken port fails before
// anything touches ZooKeeper.
func newDaemon(cfg *Config, certs *config.KeyPair, logs *logging.AsyncWriter, log *slog.Logger) (*daemon, error) {
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on http.addr: %w", err)
	}
	// The elector adds path and id to its lines itself; the rest get them here.
	d := &daemon{cfg: cfg, log: log.With("path", cfg.path(), "id", cfg.ID), logs: logs}
	d.log.Info("starting electd", "version", version, "commit", commit, "mode", cfg.Election.Mode,
		"servers", cfg.ZooKeeper.Servers, "auth", cfg.ZooKeeper.Auth != "", "http_addr", ln.Addr().String(),
		"tls", certs != nil, "max_connections", cfg.HTTP.MaxConnections)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// d.el is set below, before the server that scrapes exists.
	m := metrics.New(reg, cfg.path(), metrics.StatusFunc(func() election.Status { return d.el.Status() }), buildInfo())

	sc := cfg.sessionConfig()
	sc.Logger, sc.Recorder = d.log, m
	if d.sess, err = election.Connect(sc); err != nil {
		ln.Close()
		return nil, err
	}
	ec := cfg.electionConfig()
	ec.Logger, ec.Recorder = log, m
	ec.Observer = cfg.startsObserver()
	if d.el, err = election.New(d.sess, ec); err != nil {
		ln.Close()
		d.sess.Close()
		return nil, err
	}
	metrics.CountWork(reg, cfg.path(), d.el.Counters)
	if d.kube, err = newKube(cfg, d.el, m, d.log); err != nil {
		ln.Close()
		d.sess.Close()
		return nil, err
	}
	d.follow = newFollowing(cfg, d.el, reg, d.log)
	apiEl, switcher := d.follow.api()
	d.history = history.New(history.DefaultSize, time.Now)

	reqCtx, cancel := context.WithCancel(context.Background())
	d.cancelRequests = cancel
	hc := httpserver.Config{
		MaxConnections: cfg.HTTP.MaxConnections, MaxStreams: cfg.HTTP.MaxStreams, MaxWaiters: cfg.HTTP.MaxWaiters,
		AdminToken: cfg.HTTP.AdminToken, Live: d.live, Registry: reg, Path: cfg.path(),
		DroppedLines: logs.Dropped, Logger: d.log, Candidacy: d.follow, Switchover: switcher, History: d.history,
	}
	if certs != nil {
		hc.GetCertificate = certs.GetCertificate
	}
	if d.kube != nil {
		hc.Kubernetes = d.kube.Status
	}
	d.http = httpserver.New(reqCtx, ln, apiEl, hc)
	return d, nil
}

// serve runs the election and the HTTP server until a signal or a failure,
// then shuts down as docs/DESIGN.md's "Process" says.
func serve(cfg *Config, certs *config.KeyPair, logs *logging.AsyncWriter, log *slog.Logger) int {
	sigs := stopSignals()
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	// exec.on_exit: exit ends electd as a signal does.
	ctx, quit := context.WithCancel(ctx)
	defer quit()
	d, err := newDaemon(cfg, certs, logs, log)
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
			return fmt.Errorf("election stopped before any signal: %v", err)
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
