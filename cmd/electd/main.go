// Command electd is a leader-election sidecar on Apache ZooKeeper: it joins
// one election and tells the application next to it, over HTTP and
// Prometheus, whether it leads and who does. See docs/DESIGN.md and --help.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/history"
	"github.com/electd/electd/internal/kube"
	"github.com/electd/electd/internal/metrics"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run returns the exit status: 0 clean, 1 runtime failure, 2 bad configuration.
func run(args []string, stdout, stderr io.Writer) int {
	// `electd status` and `electd release` talk to a running daemon (cli.go).
	if code, ok := runCommand(args, stdout, stderr); ok {
		return code
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
		warnUnknownEnv(newLogger(stderr, cfg.Log.Level, cfg.Log.Format))
		printEffective(stdout, cfg)
		return 0
	}

	// From here on the daemon logs through a queue that never blocks
	// (logwriter.go), and a closed stderr no longer kills it.
	survivePipes()
	logs := newAsyncWriter(stderr, droppedNotice(cfg.Log.Level, cfg.Log.Format))
	defer logs.Flush(exitFlush)
	log := newLogger(logs, cfg.Log.Level, cfg.Log.Format)
	certs := cfg.httpCert()
	if certs != nil {
		certs.OnReload = logCertReload(log)
	}
	warnUnknownEnv(log)
	return serve(cfg, serverOptionsFor(cfg), certs, logs, log)
}

// logCertReload logs each change of the HTTP API's certificate files.
func logCertReload(log *slog.Logger) func(*tls.Certificate, error) {
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

func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level)) // validated already
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: durationsAsText}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// durationsAsText prints durations as the text format and the
// configuration do ("10s"): slog's JSON handler would print nanoseconds.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// droppedNotice renders the line that stands for lost log lines, in the
// configured format.
func droppedNotice(level, format string) func(uint64) []byte {
	return func(n uint64) []byte {
		var b bytes.Buffer
		newLogger(&b, level, format).Warn("log lines dropped: stderr was not read fast enough", "dropped", n)
		return b.Bytes()
	}
}

// daemon is one electd: built by newDaemon, run by serve, stopped by shutdown.
type daemon struct {
	cfg            *Config
	log            *slog.Logger
	logs           *asyncWriter
	signals        []os.Signal // that stop it, see stopSignals
	sess           *election.Session
	el             *election.Elector
	http           *httpServer
	kube           *kube.Labeler      // nil unless a leader label or Lease is configured
	cancelRequests context.CancelFunc // ends long polls and /events streams
	follow         *following         // app health, candidacy, exec mode (follow.go)
	history        *history.Log       // GET /history and the status page, fed by serve
}

// newDaemon listens, starts the ZooKeeper session and builds the election
// and the HTTP server. Listening comes first: a taken port fails before
// anything touches ZooKeeper.
func newDaemon(cfg *Config, sopts serverOptions, certs *config.KeyPair, logs *asyncWriter, log *slog.Logger) (*daemon, error) {
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on http.addr: %w", err)
	}
	// The elector adds path and id to its lines itself; the rest get them here.
	d := &daemon{cfg: cfg, log: log.With("path", cfg.path(), "id", cfg.ID), logs: logs}
	d.log.Info("starting electd", "version", version, "commit", commit, "mode", cfg.Election.Mode,
		"servers", cfg.ZooKeeper.Servers, "auth", cfg.ZooKeeper.Auth != "", "http_addr", ln.Addr().String(),
		"tls", certs != nil, "max_connections", sopts.MaxConnections)

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
	d.history = history.New(history.DefaultSize, clock.Real())

	reqCtx, cancel := context.WithCancel(context.Background())
	d.cancelRequests = cancel
	api := apiConfig{
		opts: sopts, certs: certs, adminToken: cfg.HTTP.AdminToken, live: d.live,
		reg: reg, path: cfg.path(), droppedLines: logs.Dropped, log: d.log,
		candidacy: d.follow, switchover: switcher, history: d.history,
	}
	if d.kube != nil {
		api.kube = func() any { return d.kube.Status() }
	}
	d.http = newAPIServer(ln, apiEl, api, reqCtx)
	return d, nil
}

// serve runs the election and the HTTP server until a signal or a failure,
// then shuts down as docs/DESIGN.md's "Process" says.
func serve(cfg *Config, sopts serverOptions, certs *config.KeyPair, logs *asyncWriter, log *slog.Logger) int {
	sigs := stopSignals()
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	// exec.on_exit: exit ends electd as a signal does.
	ctx, quit := context.WithCancel(ctx)
	defer quit()
	d, err := newDaemon(cfg, sopts, certs, logs, log)
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
	g.Go(d.http.serve)
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
