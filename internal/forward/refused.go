package forward

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/electd/electd/internal/clock"
)

// refusals turns the proxy's step-downs into a withdrawal that lasts while
// the application refuses connections (docs/design/proxy-app.md, "Forwarding": the
// application stops first). StepDown records the refusal (the candidacy
// withdraws this participant, through the proxy's Yield, and with election.handoff
// newest a pod deletion hands over as a shutdown does); Run then dials the
// application every RetryEvery and lifts the refusal at the first
// connection it takes, so that an application that restarted stands
// again. A pod that is being deleted gets its SIGTERM first. A step-down
// for an application that hangs (answer timeouts) is lifted as soon: a
// hung application still takes connections, so its participant stands
// again at the back of the line, and app.health_url keeps it out while it
// fails its checks.
type refusals struct {
	cfg  refusalsConfig
	kick chan struct{}

	mu      sync.Mutex
	refused bool
	gen     uint64 // counts StepDowns: a refusal recorded while Run dialled is not lifted by that dial
}

// refusalsConfig configures refusals.
type refusalsConfig struct {
	// App is the application's host:port (proxy.app).
	App string
	// Set records the refusal (why) or lifts it (""), also when Probe
	// sees the application take its first connection: the candidacy's
	// SetAppRefused, and the election's SetAppUp. It must not block.
	Set func(why string)
	// DialTimeout bounds each dial (proxy.dial_timeout).
	DialTimeout time.Duration
	// RetryEvery paces the dials while the application refuses. Default
	// defaultRetryEvery.
	RetryEvery time.Duration
	// Clock paces them. Default clock.Real().
	Clock clock.Clock
	// Logger gets a line when the application takes connections again.
	Logger *slog.Logger
}

// defaultRetryEvery is refusalsConfig.RetryEvery's default.
const defaultRetryEvery = time.Second

// newRefusals returns refusals for cfg; Run must run.
func newRefusals(cfg refusalsConfig) *refusals {
	if cfg.RetryEvery <= 0 {
		cfg.RetryEvery = defaultRetryEvery
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &refusals{cfg: cfg, kick: make(chan struct{}, 1)}
}

// StepDown is the proxy's Leadership.StepDown (Leadership.OnStepDown): it
// never blocks.
func (r *refusals) StepDown(reason string) {
	r.mu.Lock()
	r.refused = true
	r.gen++
	r.cfg.Set(reason) // under mu: in the order the refusals and lifts happen
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Refused reports whether the refusal stands.
func (r *refusals) Refused() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused
}

// Run watches a refusal until the application takes a connection again,
// every time one is recorded, until ctx ends.
func (r *refusals) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		}
		r.mu.Lock()
		gen := r.gen
		r.mu.Unlock()
		if !r.await(ctx) {
			return
		}
		r.mu.Lock()
		lift := r.gen == gen
		if lift {
			r.refused = false
			r.cfg.Set("")
		}
		r.mu.Unlock()
		if lift {
			r.cfg.Logger.Info("the application takes connections again: standing for leadership", "app", r.cfg.App)
		}
	}
}

// Probe dials the application at once, then every RetryEvery, until it
// takes a first connection, and then says so with Set(""), unless a
// refusal was recorded meanwhile (Run lifts that one). Until then electd
// publishes that its application is not up, so that a leader leaving for
// good does not hand over to it (docs/design/handover.md, "Handoff"); it stands
// meanwhile.
func (r *refusals) Probe(ctx context.Context) {
	r.mu.Lock()
	gen := r.gen
	r.mu.Unlock()
	d := net.Dialer{Timeout: r.cfg.DialTimeout}
	for {
		c, err := d.DialContext(ctx, "tcp", r.cfg.App)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-r.cfg.Clock.After(r.cfg.RetryEvery):
		}
	}
	r.mu.Lock()
	if r.gen == gen {
		r.cfg.Set("")
	}
	r.mu.Unlock()
}

// await dials the application every RetryEvery until it takes a
// connection (true) or ctx ends (false).
func (r *refusals) await(ctx context.Context) bool {
	d := net.Dialer{Timeout: r.cfg.DialTimeout}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-r.cfg.Clock.After(r.cfg.RetryEvery):
		}
		c, err := d.DialContext(ctx, "tcp", r.cfg.App)
		if err == nil {
			_ = c.Close()
			return true
		}
	}
}
