package follow

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/electd/electd/internal/apphealth"
	"github.com/electd/electd/internal/candidacy"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/execmode"
)

// Config configures an App; internal/config builds it from the app.*,
// exec.* and election keys.
type Config struct {
	// Operator is election.candidate; Standing says whether the election
	// starts standing (not election.Config.Observer).
	Operator, Standing bool
	// Resumed says this process resumed a standing participant's session:
	// its application counts as healthy until the first check decides
	// (candidacy.Config.Resumed). Default false.
	Resumed bool
	// Health checks the application when its URL is set (app.health_url):
	// this participant then stands only while the application passes. Its
	// Recorder counts the checks (metrics.App).
	Health apphealth.Config
	// Command, when set, is electd run's: it runs only while this
	// participant leads, as Exec says (its HTTPAddr is the API's address
	// as bound).
	Command []string
	Exec    execmode.Config
	// Logger gets the parts' lines. Default: discard.
	Logger *slog.Logger
}

// App is the application next to electd as the election follows it: its
// health checks, the candidacy that they and the operator decide, and in
// electd run its command. It serves the HTTP API's candidacy
// (httpapi.Candidacy) and the metrics' application health
// (metrics.AppSource).
type App struct {
	driven  Yielding
	checker *apphealth.Checker    // nil without app.health_url
	cand    *candidacy.Controller // always
	sup     *execmode.Supervisor  // nil unless electd run
	log     *slog.Logger

	mu     sync.Mutex
	failed bool // the command ended with a failure under exec.on_exit: exit
}

// New builds the parts on el. Every hand-over the
// API or the candidacy starts goes through proxy's Yield (the forwarding
// proxy's, which passes through when there is none), then exec mode's:
// the requests the application has finish, then the command stops, then
// leadership goes.
func New(el *election.Elector, proxy Yielder, cfg Config) *App {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &App{log: cfg.Logger}
	yields := []Yielder{proxy}
	if len(cfg.Command) > 0 {
		a.sup = newSupervisor(el, cfg)
		yields = append(yields, a.sup)
	}
	a.driven = NewYielding(el, a.sup != nil, yields...)
	h := cfg.Health
	a.cand = candidacy.New(a.driven, candidacy.Config{
		Operator: cfg.Operator, AppChecked: h.URL != "", Resumed: cfg.Resumed, Standing: cfg.Standing, Logger: cfg.Logger,
	})
	if h.URL != "" {
		msg := "checking the application's health: not standing before a check passes"
		if cfg.Resumed {
			msg = "checking the application's health: the session was resumed, so standing unless the first check fails"
		}
		h.Resumed = cfg.Resumed
		cfg.Logger.Info(msg, "url", h.URL,
			"interval", h.Interval, "timeout", h.Timeout,
			"failure_threshold", h.FailureThreshold, "success_threshold", h.SuccessThreshold)
		h.Logger = cfg.Logger
		a.checker = apphealth.New(h)
	}
	return a
}

// newSupervisor is electd run's: it runs cfg.Command while el leads.
func newSupervisor(el *election.Elector, cfg Config) *execmode.Supervisor {
	x := cfg.Exec
	cfg.Logger.Info("exec mode: the command runs only while this participant leads",
		"command", cfg.Command, "kill_timeout", x.KillTimeout, "on_exit", x.OnExit)
	if cfg.Health.URL != "" {
		cfg.Logger.Warn("app.health_url with electd run: the command runs on the leader only, " +
			"so if it serves that URL the followers never stand")
	}
	x.Logger = cfg.Logger.With("command", cfg.Command[0])
	return execmode.New(el, execmode.GuardStarter{Argv: cfg.Command, KillTimeout: x.KillTimeout}, x)
}

// Elector is what the HTTP API drives: a release or switchover lets the
// proxy's requests finish and, in exec mode, stops the command before
// leadership goes.
func (a *App) Elector() Yielding { return a.driven }

// State implements httpapi.Candidacy: the controller's state with the
// last check's outcome (the controller hears of changes of state only).
func (a *App) State() candidacy.State {
	s := a.cand.State()
	if a.checker != nil {
		s.AppDetail = a.checker.Health().Detail
	}
	return s
}

// SetOperator implements httpapi.Candidacy.
func (a *App) SetOperator(ctx context.Context, candidate bool) (candidacy.State, error) {
	_, err := a.cand.SetOperator(ctx, candidate)
	return a.State(), err
}

// SetAppRefused records that the application refuses connections, or
// takes them again (""): the forwarding proxy's finding (candidacy's
// SetAppRefused). It never blocks.
func (a *App) SetAppRefused(why string) { a.cand.SetAppRefused(why) }

// AppHealthy implements metrics.AppSource.
func (a *App) AppHealthy() bool {
	s := a.cand.State().App
	return s == candidacy.AppDisabled || s == candidacy.AppHealthy
}

// Run runs the checks, the candidacy and the command until ctx ends. When
// the command ends under exec.on_exit: exit, it calls quit, which shuts
// electd down as a signal does.
func (a *App) Run(ctx context.Context, quit func()) {
	var wg sync.WaitGroup
	wg.Go(func() { a.cand.Run(ctx) })
	if a.checker != nil {
		wg.Go(func() { a.checker.Run(ctx, a.cand.SetApp) })
	}
	if a.sup != nil {
		wg.Go(func() {
			var ee *execmode.ExitError
			if err := a.sup.Run(ctx); errors.As(err, &ee) {
				a.log.Info("exec.on_exit: exit: shutting down", "how", ee.Exit.String())
				a.mu.Lock()
				a.failed = ee.Exit.Code != 0 || ee.Exit.Err != nil
				a.mu.Unlock()
				quit()
			}
		})
	}
	wg.Wait()
}

// Stop stops the command for good, before shutdown deletes the node.
func (a *App) Stop(ctx context.Context) {
	if a.sup != nil {
		if err := a.sup.Stop(ctx); err != nil {
			a.log.Warn("the command did not stop in time", "err", err)
		}
	}
}

// ExitStatus is electd's exit status after a clean shutdown: 1 when the
// command ended with a failure under exec.on_exit: exit, else 0.
func (a *App) ExitStatus() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed {
		return 1
	}
	return 0
}
