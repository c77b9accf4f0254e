// Package candidacy decides whether this participant stands for leadership
// (docs/design/handover.md, "Candidacy").
//
// Two things must allow it. The operator allows it with election.candidate
// at start and POST /candidacy at run time. The application allows it by
// its health, when app.health_url is set. With the forwarding proxy, it
// must also take connections.
//
// A Controller applies the decision to the election through SetCandidate,
// one change at a time. It keeps at it until the election has it.
package candidacy

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/electd/electd/internal/apphealth"
	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/election"
)

// Elector is the part of *election.Elector a Controller drives.
type Elector interface {
	// SetCandidate withdraws (false) or restores (true) candidacy. It
	// blocks until done or ctx ends. why is ignored when candidate is true.
	SetCandidate(ctx context.Context, candidate bool, why election.LossReason) error
}

// Config configures a Controller.
type Config struct {
	// Operator is election.candidate: whether the operator lets this
	// participant stand at start.
	Operator bool
	// AppChecked says app.health_url is set. The participant then stands
	// only while the application is healthy, not before its first check.
	AppChecked bool
	// Resumed says this process resumed the session of a participant that
	// stood (docs/design/session-and-faults.md, "Resuming a session after a
	// restart"). With AppChecked the application counts as healthy until
	// the first check decides (apphealth.Config.Resumed): the participant
	// keeps standing through the restart. Default false.
	Resumed bool
	// Standing is whether the election starts standing
	// (not election.Config.Observer).
	Standing bool
	// Logger gets one line per change of standing. Default: discard.
	Logger *slog.Logger
	// Retry is the pause after a SetCandidate that failed. Default 1s.
	Retry time.Duration
	// Clock times that pause. Default clock.Real().
	Clock clock.Clock
}

// AppState is the application's health as candidacy sees it.
type AppState string

const (
	AppDisabled  AppState = "disabled" // no app.health_url
	AppUnknown   AppState = "unknown"  // no decision of the thresholds yet
	AppHealthy   AppState = "healthy"
	AppUnhealthy AppState = "unhealthy"
)

// State is a Controller's view, for GET /candidacy and /leader.
type State struct {
	// Operator is the operator's setting (election.candidate, POST /candidacy).
	Operator bool
	// App is the application's health; AppDetail the last check's outcome.
	App       AppState
	AppDetail string
	// Standing is what the election last confirmed: whether this
	// participant stands.
	Standing bool
	// Pending says the wanted standing is not applied yet.
	Pending bool
	// Why is why it does not stand, while it does not (and is wanted not to).
	Why election.LossReason
}

// applied is what SetCandidate last completed with.
type applied struct {
	standing bool
	why      election.LossReason
}

// Controller keeps the election's candidacy equal to what the operator and
// the application allow.
type Controller struct {
	el    Elector
	log   *slog.Logger
	retry time.Duration
	clock clock.Clock

	sem  chan struct{} // held while a SetCandidate runs: one change at a time
	kick chan struct{} // wakes Run

	// logged is set by the first logChange (guarded by sem). Before it,
	// the reason held is the observer's placeholder, not one to report.
	logged bool

	mu        sync.Mutex
	operator  bool
	app       AppState
	appDetail string
	refused   string // why the application refuses connections; "" while it takes them
	done      applied
}

// New returns a Controller; changes are applied by Run and SetOperator.
func New(el Elector, cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	app := AppDisabled
	switch {
	case cfg.AppChecked && cfg.Resumed:
		app = AppHealthy
	case cfg.AppChecked:
		app = AppUnknown
	}
	c := &Controller{
		el: el, log: cfg.Logger, retry: cfg.Retry, clock: cfg.Clock,
		sem: make(chan struct{}, 1), kick: make(chan struct{}, 1),
		operator: cfg.Operator, app: app,
		done: applied{standing: cfg.Standing},
	}
	if !cfg.Standing {
		c.done.why = election.LossWithdrawn // what the election reports for an observer
	}
	c.wake()
	return c
}

// want is the standing the operator and the application allow, and the
// reason when they do not. The operator's withdrawal wins over the
// application's health: it lasts until the operator says otherwise.
// Called with mu held.
func (c *Controller) want() applied {
	switch {
	case !c.operator:
		return applied{why: election.LossWithdrawn}
	case c.app != AppDisabled && c.app != AppHealthy, c.refused != "":
		return applied{why: election.LossAppUnhealthy}
	}
	return applied{standing: true}
}

// satisfied reports whether done already is w (the reason counts only
// while not standing).
func satisfied(done, w applied) bool {
	return done.standing == w.standing && (w.standing || done.why == w.why)
}

// State returns the Controller's view now.
func (c *Controller) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := State{Operator: c.operator, App: c.app, AppDetail: c.appDetail, Standing: c.done.standing}
	if c.refused != "" {
		s.App, s.AppDetail = AppUnhealthy, c.refused
	}
	s.Pending = !satisfied(c.done, c.want())
	if !s.Standing {
		s.Why = c.done.why
	}
	return s
}

// SetApp records the application's health (apphealth.Checker's changes)
// and lets Run apply it. It never blocks.
func (c *Controller) SetApp(h apphealth.Health) {
	c.mu.Lock()
	switch h.State {
	case apphealth.Healthy:
		c.app = AppHealthy
	case apphealth.Unhealthy:
		c.app = AppUnhealthy
	default:
		c.app = AppUnknown
	}
	c.appDetail = h.Detail
	c.mu.Unlock()
	c.wake()
}

// SetAppRefused records that the application refuses connections, saying
// why, or takes them again (""). The forwarding proxy finds it
// (docs/design/proxy.md, "Forwarding"). Run applies it: a participant whose
// application refuses connections does not stand, whatever its health
// checks say. It never blocks.
func (c *Controller) SetAppRefused(why string) {
	c.mu.Lock()
	c.refused = why
	c.mu.Unlock()
	c.wake()
}

// SetOperator records the operator's setting and applies it before it
// returns. If ctx ends first, the setting stays recorded and Run applies
// it later. The State returned is the one after.
func (c *Controller) SetOperator(ctx context.Context, candidate bool) (State, error) {
	c.mu.Lock()
	c.operator = candidate
	c.mu.Unlock()
	c.wake()
	err := c.apply(ctx)
	return c.State(), err
}

// Run applies changes as they come, retrying a failed SetCandidate every
// Retry, until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		if err := c.apply(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("could not change candidacy; retrying", "err", err, "retry", c.retry)
			select {
			case <-ctx.Done():
				return
			case <-c.clock.After(c.retry):
				c.wake()
			}
		}
	}
}

func (c *Controller) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// apply brings the election to what is wanted now, one change at a time.
func (c *Controller) apply(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.sem }()
	for {
		c.mu.Lock()
		w, done := c.want(), c.done
		c.mu.Unlock()
		if satisfied(done, w) {
			return nil
		}
		if err := c.el.SetCandidate(ctx, w.standing, w.why); err != nil {
			return err
		}
		c.mu.Lock()
		c.done = w
		c.mu.Unlock()
		c.logChange(done, w)
		// Loop: what is wanted may have changed while SetCandidate ran.
	}
}

func (c *Controller) logChange(from, to applied) {
	first := !c.logged
	c.logged = true
	switch {
	case to.standing:
		c.log.Info("standing for leadership")
	case from.standing || first:
		c.log.Info("not standing for leadership", "reason", string(to.why))
	default:
		c.log.Info("not standing for leadership: new reason", "reason", string(to.why), "was", string(from.why))
	}
}
