package apphealth

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/electd/electd/internal/clock"
)

// Config configures a Checker. Validation of the values is the
// configuration's (internal/config, app.*).
type Config struct {
	URL              string        // GET target; an answer from 200 to 399 passes
	Interval         time.Duration // between the starts of two checks
	Timeout          time.Duration // of one check, at most Interval
	FailureThreshold int           // failures in a row that make it Unhealthy
	SuccessThreshold int           // passes in a row that make it Healthy
	// Resumed starts Healthy on trust: the application served a leader
	// whose session this process resumed. The first check alone decides:
	// a failure makes it Unhealthy at once. Default false: Unknown.
	Resumed bool

	// Client sends the checks. Default: NewClient(Timeout).
	Client *http.Client
	// Clock schedules the checks and stamps Health.Since. Default: clock.Real().
	Clock clock.Clock
	// Logger gets one line per change of state and a debug line per failed
	// check. Default: discard.
	Logger *slog.Logger
	// Recorder counts every check. Default: none.
	Recorder Recorder
}

// Recorder counts checks; the metrics package implements it. Its method
// must not block.
type Recorder interface {
	AppHealthChecked(Result)
}

type nopRecorder struct{}

func (nopRecorder) AppHealthChecked(Result) {}

// Checker checks one application until its context ends.
type Checker struct {
	cfg Config

	mu     sync.Mutex
	tally  tally
	health Health
}

// New returns a Checker; nothing runs before Run.
func New(cfg Config) *Checker {
	if cfg.Client == nil {
		cfg.Client = NewClient(cfg.Timeout)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	c := &Checker{
		cfg:    cfg,
		tally:  tally{failureThreshold: cfg.FailureThreshold, successThreshold: cfg.SuccessThreshold},
		health: Health{State: Unknown, Since: cfg.Clock.Now()},
	}
	if cfg.Resumed {
		c.tally.state, c.tally.trial, c.health.State = Healthy, true, Healthy
	}
	return c
}

// Health returns what the checker knows now, from memory.
func (c *Checker) Health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.health
}

// Run checks at once, then every Interval until ctx ends. The interval
// runs from the start of one check to the start of the next. Run calls
// changed with each new state, from its own goroutine. changed should
// return quickly: the next check waits for it.
func (c *Checker) Run(ctx context.Context, changed func(Health)) {
	for {
		start := c.cfg.Clock.Now()
		res, text := c.check(ctx)
		if ctx.Err() != nil {
			return
		}
		if h, ok := c.record(res, text); ok {
			changed(h)
		}
		wait := c.cfg.Interval - c.cfg.Clock.Now().Sub(start)
		select {
		case <-ctx.Done():
			return
		case <-c.cfg.Clock.After(max(wait, 0)):
		}
	}
}

func (c *Checker) check(ctx context.Context) (Result, string) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	return probe(ctx, c.cfg.Client, c.cfg.URL)
}

// record counts one outcome and returns the new Health when the state
// changed.
func (c *Checker) record(res Result, text string) (Health, bool) {
	c.cfg.Recorder.AppHealthChecked(res)
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.health.State
	c.health.Detail = text
	if res != Success {
		c.cfg.Logger.Debug("application health check failed", "url", c.cfg.URL, "result", string(res), "detail", text)
	}
	if !c.tally.add(res == Success) {
		return Health{}, false
	}
	c.health.State, c.health.Since = c.tally.state, c.cfg.Clock.Now()
	log := c.cfg.Logger.Info
	if c.health.State != Healthy {
		log = c.cfg.Logger.Warn
	}
	log("application "+c.health.State.String(), "url", c.cfg.URL, "was", prev.String(), "detail", text)
	return c.health, true
}
