// Command electd is a leader-election sidecar on Apache ZooKeeper: it joins
// one election and tells the application next to it, over HTTP and
// Prometheus, whether it leads and who does. See DESIGN.md and --help.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/httpapi"
	"github.com/electd/electd/internal/kube"
	"github.com/electd/electd/internal/metrics"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run returns the exit status: 0 clean, 1 runtime failure, 2 bad configuration.
func run(args []string, stdout, stderr io.Writer) int {
	fs, opts, err := parseFlags(args)
	if err != nil {
		return fail(stderr, err)
	}
	switch {
	case opts.help:
		printHelp(stdout)
		return 0
	case opts.version:
		printVersion(stdout)
		return 0
	}
	cfg, err := load(fs, opts.config)
	if err != nil {
		return fail(stderr, err)
	}
	log := newLogger(stderr, cfg.Log.Level, cfg.Log.Format)
	for _, name := range unknownEnv(os.Environ()) {
		log.Warn("ignoring unknown environment variable", "name", name)
	}
	if opts.validate {
		printEffective(stdout, cfg)
		return 0
	}
	return serve(cfg, log)
}

// fail prints the one line a bad configuration gets and returns status 2.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "electd: %s\n", strings.Join(strings.Fields(err.Error()), " "))
	return 2
}

func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level)) // validated already
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// daemon is one electd: built by newDaemon, run by serve, stopped by shutdown.
type daemon struct {
	cfg            *Config
	log            *slog.Logger
	ln             net.Listener
	sess           *election.Session
	el             *election.Elector
	kube           *kube.Labeler // nil unless a leader label or Lease is configured
	srv            *http.Server
	cancelRequests context.CancelFunc // ends long polls and /events streams
	started        chan struct{}      // closed by gateHealthz
}

// newDaemon listens, starts the ZooKeeper session and builds the election
// and the HTTP server. Listening comes first: a taken port fails before
// anything touches ZooKeeper.
func newDaemon(cfg *Config, log *slog.Logger) (*daemon, error) {
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on http.addr: %w", err)
	}
	// The elector adds path and id to its lines itself; the rest get them here.
	d := &daemon{cfg: cfg, log: log.With("path", cfg.path(), "id", cfg.ID), ln: ln, started: make(chan struct{})}
	d.log.Info("starting electd", "version", version, "commit", commit, "mode", cfg.Election.Mode,
		"servers", cfg.ZooKeeper.Servers, "auth", cfg.ZooKeeper.Auth != "", "http_addr", ln.Addr().String())

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
	if d.el, err = election.New(d.sess, ec); err != nil {
		ln.Close()
		d.sess.Close()
		return nil, err
	}
	if d.kube, err = newKube(cfg, d.el, d.log); err != nil {
		ln.Close()
		d.sess.Close()
		return nil, err
	}

	reqCtx, cancel := context.WithCancel(context.Background())
	d.cancelRequests = cancel
	d.srv = &http.Server{
		Handler: httpapi.NewRouter(d.el, httpapi.Options{
			AdminToken: cfg.HTTP.AdminToken,
			Metrics:    promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
			Live:       d.live,
			Logger:     d.log,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
	return d, nil
}

// serve runs the election and the HTTP server until a signal or a failure,
// then shuts down as DESIGN.md's "Process" says.
func serve(cfg *Config, log *slog.Logger) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	d, err := newDaemon(cfg, log)
	if err != nil {
		log.Error("electd cannot start", "err", err)
		return 1
	}

	// The election outlives the signal: shutdown resigns it after the grace.
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	g, gctx := errgroup.WithContext(ctx)
	go d.gateHealthz(gctx)
	d.runKube(runCtx)
	g.Go(func() error {
		if err := d.srv.Serve(d.ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http server: %w", err)
		}
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
	return 0
}

// live is /healthz: the election loop runs and the session is not closed,
// and the startup gate is open (gateHealthz).
func (d *daemon) live() error {
	select {
	case <-d.el.Done():
		return errors.New("election loop stopped")
	default:
	}
	if d.sess.State() == election.StateClosed {
		return errors.New("zookeeper session closed")
	}
	select {
	case <-d.started:
		return nil
	default:
		return errStarting
	}
}
