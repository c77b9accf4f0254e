package execmode

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/election"
)

// Election is the part of *election.Elector the Supervisor watches.
type Election interface {
	Status() election.Status
	Observe(ctx context.Context) <-chan election.Status
	Release(ctx context.Context) error
}

// OnExit is exec.on_exit: what to do when the command exits on its own
// while this participant leads.
type OnExit string

const (
	OnExitRelease OnExit = "release" // give leadership up, re-queue; run it again when leading again
	OnExitRestart OnExit = "restart" // run it again, still leading
	OnExitExit    OnExit = "exit"    // electd shuts down
)

// Config configures a Supervisor.
type Config struct {
	KillTimeout time.Duration // exec.kill_timeout: SIGTERM, then SIGKILL this much later
	OnExit      OnExit        // exec.on_exit

	// Env is the command's environment before the ELECTD_* variables of
	// commandEnv; ElectionPath and HTTPAddr are two of those.
	Env                    []string
	ElectionPath, HTTPAddr string

	// Logger gets a line per start, stop and exit. Default: discard.
	Logger *slog.Logger
	// Mono is the clock of lease deadlines. Default: Mono.
	Mono func() int64
	// Refresh is how often the lease deadline is handed to the guard.
	// Default 100ms: far below any lease, which a tenth of the session
	// timeout renews. It costs a few bytes on a pipe.
	Refresh time.Duration
	// MinRun: a command that exits on its own sooner than this after its
	// start delays the next start (1s, doubling to MaxBackoff). A command
	// that fails at once then does not spin. Default 10s.
	MinRun time.Duration
	// MaxBackoff bounds that wait. Default 30s.
	MaxBackoff time.Duration
	// Clock times the runs and the wait. Default clock.Real().
	Clock clock.Clock
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Mono == nil {
		c.Mono = Mono
	}
	if c.Refresh <= 0 {
		c.Refresh = 100 * time.Millisecond
	}
	if c.MinRun <= 0 {
		c.MinRun = 10 * time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.OnExit == "" {
		c.OnExit = OnExitRelease
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
}

// ExitError is Run's error with on_exit: exit, once the command exited on
// its own.
type ExitError struct{ Exit Exit }

func (e *ExitError) Error() string {
	return "the command ended (" + e.Exit.String() + "); exec.on_exit: exit"
}

// Supervisor runs the command while this participant leads.
type Supervisor struct {
	el    Election
	start Starter
	cfg   Config
	log   *slog.Logger

	requests chan request
	ended    chan struct{} // closed when Run returns

	// Run's own state.
	child     Child
	stopping  bool            // Stop was sent to child
	startedAt time.Time       // of child
	quick     int             // runs in a row that ended on their own before MinRun
	notBefore time.Time       // no start before (backoff)
	retry     <-chan struct{} // closed at notBefore; nil without a backoff
	stopRetry func()
	holds     int  // Yields in progress: no command runs meanwhile
	stopped   bool // Stop was called: none ever again
	waiting   []chan struct{}
}

// request asks Run to stop the command and hold off starting it (hold),
// or to end one such hold.
type request struct {
	hold, forever bool
	gone          chan struct{} // closed once no command runs
}

// New returns a Supervisor for the command that start starts.
func New(el Election, start Starter, cfg Config) *Supervisor {
	cfg.setDefaults()
	return &Supervisor{el: el, start: start, cfg: cfg, log: cfg.Logger,
		requests: make(chan request), ended: make(chan struct{})}
}

// Run starts and stops the command as leadership comes and goes. It
// returns when ctx ends, killing a command still running; call Stop first
// for a graceful end. With on_exit: exit, it also returns when the command
// exits on its own (*ExitError).
func (s *Supervisor) Run(ctx context.Context) error {
	defer close(s.ended)
	obs := s.el.Observe(ctx)
	tick := time.NewTicker(s.cfg.Refresh)
	defer tick.Stop()
	for {
		var done <-chan struct{}
		if s.child != nil {
			done = s.child.Done()
		}
		select {
		case <-ctx.Done():
			s.abandon()
			return nil
		case _, ok := <-obs:
			if !ok {
				obs = nil
			}
		case <-tick.C:
		case <-s.retry:
			s.retry = nil
		case r := <-s.requests:
			s.handle(r)
		case <-done:
			if err := s.exited(ctx, s.child.Exit()); err != nil {
				return err
			}
		}
		s.reconcile()
	}
}

// Yield stops the command and waits until it is gone, at most the kill
// timeout. It then runs f, and lets the command run again if this
// participant still leads. Release, switchover and a withdrawal go through
// it, so the next leader's command cannot start while this one runs. f
// runs even when Run has ended.
func (s *Supervisor) Yield(ctx context.Context, f func(context.Context) error) error {
	if s.ask(request{hold: true}) {
		defer s.ask(request{})
	}
	return f(ctx)
}

// Stop stops the command for good and returns once it is gone, or when
// ctx ends. Shutdown calls it before it deletes this participant's node.
func (s *Supervisor) Stop(ctx context.Context) error {
	gone := make(chan struct{})
	select {
	case s.requests <- request{hold: true, forever: true, gone: gone}:
	case <-s.ended:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-gone:
		return nil
	case <-s.ended:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ask sends r to Run and, for a hold, waits until no command runs. It
// reports false when Run has ended.
func (s *Supervisor) ask(r request) bool {
	if r.hold {
		r.gone = make(chan struct{})
	}
	select {
	case s.requests <- r:
	case <-s.ended:
		return false
	}
	if r.hold {
		select {
		case <-r.gone:
		case <-s.ended:
		}
	}
	return true
}

func (s *Supervisor) handle(r request) {
	switch {
	case r.hold:
		s.holds++
		s.stopped = s.stopped || r.forever
		s.waiting = append(s.waiting, r.gone)
	case s.holds > 0:
		s.holds--
	}
}

// reconcile brings the command in line with the election now.
func (s *Supervisor) reconcile() {
	m0 := s.cfg.Mono() // before Status: the deadline can only come out early
	st := s.el.Status()
	if s.child != nil {
		if holdsLeaderNode(st) {
			s.child.Lease(m0 + int64(max(st.LeaseRemaining, 0)))
		}
		if !s.stopping && (!st.IsLeader || s.holds > 0) {
			s.stopping = true
			s.log.Info("stopping the command", "pid", s.child.Pid(), "reason", stopReason(st, s.holds > 0), "kill_timeout", s.cfg.KillTimeout)
			s.child.Stop(s.cfg.KillTimeout)
		}
		return
	}
	for _, ch := range s.waiting {
		close(ch)
	}
	s.waiting = nil
	if st.IsLeader && s.holds == 0 && !s.stopped && !s.cfg.Clock.Now().Before(s.notBefore) {
		s.run(st, m0)
	}
}

// holdsLeaderNode reports whether st's leader node is this participant's
// own, in its current session. Until that node or session ends, nobody
// else can lead, so the session's lease bounds the command.
func holdsLeaderNode(st election.Status) bool {
	return st.Node != "" && st.Leader != nil && st.Leader.Node == st.Node && st.Leader.Session == st.SessionID
}

func stopReason(st election.Status, held bool) string {
	if held {
		return "leadership is being given up"
	}
	return st.Reason
}

// run starts the command for the leadership st describes.
func (s *Supervisor) run(st election.Status, m0 int64) {
	env := commandEnv(s.cfg.Env, st, s.cfg.ElectionPath, s.cfg.HTTPAddr)
	c, err := s.start.Start(env, m0+int64(st.LeaseRemaining))
	if err != nil {
		s.log.Error("cannot start the command", "err", err)
		s.backoff(true)
		return
	}
	s.child, s.stopping, s.startedAt = c, false, s.cfg.Clock.Now()
	s.log.Info("command started", "pid", c.Pid(), "fencing_token", st.FencingToken)
}

// exited handles the end of the command.
func (s *Supervisor) exited(ctx context.Context, ex Exit) error {
	ran := s.cfg.Clock.Now().Sub(s.startedAt)
	pid := s.child.Pid()
	s.child = nil
	own := ex.Cause == CauseExited && !s.stopping
	log := s.log.Info
	if own && (ex.Code != 0 || ex.Err != nil) || ex.Cause == CauseLease || ex.Cause == CauseGuard {
		log = s.log.Warn
	}
	log("command ended", "pid", pid, "how", ex.String(), "ran", ran.Round(time.Millisecond))
	if !own || s.stopped {
		return nil
	}
	s.backoff(ran < s.cfg.MinRun)
	switch s.cfg.OnExit {
	case OnExitExit:
		return &ExitError{Exit: ex}
	case OnExitRelease:
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		switch err := s.el.Release(rctx); {
		case err == nil:
			s.log.Info("exec.on_exit: released leadership")
		case !errors.Is(err, election.ErrNotLeader):
			s.log.Warn("exec.on_exit: release failed", "err", err)
		}
	}
	return nil
}

// backoff sets when the command may start next. After a run that lasted,
// it starts at once; each quick failure in a row delays it more.
func (s *Supervisor) backoff(quick bool) {
	if !quick {
		s.quick, s.notBefore = 0, time.Time{}
		return
	}
	s.quick++
	d := min(time.Second<<min(s.quick-1, 16), s.cfg.MaxBackoff)
	s.notBefore = s.cfg.Clock.Now().Add(d)
	if s.stopRetry != nil {
		s.stopRetry()
	}
	s.retry, s.stopRetry = clock.Deadline(s.cfg.Clock, d)
	s.log.Info("the command ended quickly: waiting before the next start", "wait", d, "quick_ends", s.quick)
}

// abandon kills a command still running when Run ends and waits for it.
func (s *Supervisor) abandon() {
	if s.child == nil {
		return
	}
	s.log.Warn("killing the command: electd is stopping", "pid", s.child.Pid())
	s.child.Kill()
	<-s.child.Done()
	s.child = nil
}
