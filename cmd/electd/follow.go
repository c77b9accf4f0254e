package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/electd/electd/internal/apphealth"
	"github.com/electd/electd/internal/candidacy"
	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/execmode"
	"github.com/electd/electd/internal/forward"
	"github.com/electd/electd/internal/httpapi"
	"github.com/electd/electd/internal/metrics"
)

// following is what makes leadership follow the application
// (docs/DESIGN.md, "Candidacy"; exec mode: internal/execmode): the health checks of
// app.health_url, the candidacy that they and the operator decide, and in
// `electd run` the command that runs only while this participant leads.
type following struct {
	el      *election.Elector
	driven  forward.Elector       // el as the API and the candidacy drive it: through exec mode and the proxy
	checker *apphealth.Checker    // nil without app.health_url
	cand    *candidacy.Controller // always
	sup     *execmode.Supervisor  // nil unless electd run
	log     *slog.Logger

	mu     sync.Mutex
	failed bool // the command ended with a failure under exec.on_exit: exit
}

// startsObserver says whether the engine starts without standing: the
// operator said so, or the application has not passed a check yet.
func startsObserver(c *config.Loaded) bool {
	return !c.Election.Candidate || c.App.HealthURL != ""
}

// newFollowing builds the parts on el; their metrics go to reg. environ is
// electd's environment, which electd run's command gets without electd's
// secrets, and httpAddr the API's address as bound (ELECTD_HTTP_ADDR).
// With a forwarding proxy (y, else nil) every hand-over the API or the
// candidacy starts goes through its Yield, outside exec mode's: the
// requests the application has finish, then the command stops, then
// leadership goes.
func newFollowing(cfg *config.Loaded, environ []string, httpAddr string, el *election.Elector, y forward.Yielder, reg prometheus.Registerer, log *slog.Logger) *following {
	f := &following{el: el, driven: el, log: log}
	if cfg.Run {
		log.Info("exec mode: the command runs only while this participant leads",
			"command", cfg.Command, "kill_timeout", cfg.Exec.KillTimeout, "on_exit", cfg.Exec.OnExit)
		if cfg.App.HealthURL != "" {
			log.Warn("app.health_url with electd run: the command runs on the leader only, " +
				"so if it serves that URL the followers never stand")
		}
		f.sup = execmode.New(el, execmode.GuardStarter{Argv: cfg.Command, KillTimeout: cfg.Exec.KillTimeout}, execmode.Config{
			KillTimeout: cfg.Exec.KillTimeout, OnExit: execmode.OnExit(cfg.Exec.OnExit),
			Env: config.WithoutSecrets(environ), ElectionPath: cfg.Election.Path, HTTPAddr: httpAddr,
			Logger: log.With("command", cfg.Command[0]),
		})
		f.driven = execmode.Yielding{Elector: el, Sup: f.sup}
	}
	if y != nil {
		f.driven = forward.Yielding{Elector: f.driven, Proxy: y}
	}
	a := cfg.App
	f.cand = candidacy.New(f.driven, candidacy.Config{
		Operator: cfg.Election.Candidate, AppChecked: a.HealthURL != "", Standing: !startsObserver(cfg), Logger: log,
	})
	am := metrics.NewApp(reg, cfg.Prepared.Election.Path, f)
	if a.HealthURL != "" {
		log.Info("checking the application's health: not standing before a check passes", "url", a.HealthURL,
			"interval", a.HealthInterval, "timeout", a.HealthTimeout,
			"failure_threshold", a.FailureThreshold, "success_threshold", a.SuccessThreshold)
		f.checker = apphealth.New(apphealth.Config{
			URL: a.HealthURL, Interval: a.HealthInterval, Timeout: a.HealthTimeout,
			FailureThreshold: a.FailureThreshold, SuccessThreshold: a.SuccessThreshold,
			Logger: log, Recorder: am,
		})
	}
	return f
}

// State implements httpapi.Candidacy: the controller's state with the
// last check's outcome (the controller hears of changes of state only).
func (f *following) State() candidacy.State {
	s := f.cand.State()
	if f.checker != nil {
		s.AppDetail = f.checker.Health().Detail
	}
	return s
}

// SetOperator implements httpapi.Candidacy.
func (f *following) SetOperator(ctx context.Context, candidate bool) (candidacy.State, error) {
	_, err := f.cand.SetOperator(ctx, candidate)
	return f.State(), err
}

// AppHealthy implements metrics.AppSource.
func (f *following) AppHealthy() bool {
	s := f.cand.State().App
	return s == candidacy.AppDisabled || s == candidacy.AppHealthy
}

// api is what the HTTP API drives: a release or switchover lets the
// proxy's requests finish and, in exec mode, stops the command before
// leadership goes.
func (f *following) api() (httpapi.Election, httpapi.Switcher) {
	return f.driven, f.driven
}

// run runs the checks, the candidacy and the command until ctx ends. When
// the command ends under exec.on_exit: exit, it calls quit, which shuts
// electd down as a signal does.
func (f *following) run(ctx context.Context, quit func()) {
	var wg sync.WaitGroup
	wg.Go(func() { f.cand.Run(ctx) })
	if f.checker != nil {
		wg.Go(func() { f.checker.Run(ctx, f.cand.SetApp) })
	}
	if f.sup != nil {
		wg.Go(func() {
			var ee *execmode.ExitError
			if err := f.sup.Run(ctx); errors.As(err, &ee) {
				f.log.Info("exec.on_exit: exit: shutting down", "how", ee.Exit.String())
				f.mu.Lock()
				f.failed = ee.Exit.Code != 0 || ee.Exit.Err != nil
				f.mu.Unlock()
				quit()
			}
		})
	}
	wg.Wait()
}

// stop stops the command for good, before shutdown deletes the node.
func (f *following) stop(ctx context.Context) {
	if f.sup != nil {
		if err := f.sup.Stop(ctx); err != nil {
			f.log.Warn("the command did not stop in time", "err", err)
		}
	}
}

// status is electd's exit status after a clean shutdown: 1 when the
// command ended with a failure under exec.on_exit: exit, else 0.
func (f *following) status() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed {
		return 1
	}
	return 0
}
