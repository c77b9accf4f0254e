package execmode

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
	"github.com/electd/electd/internal/testkit"
)

var _ Election = (*election.Elector)(nil)

func leading(token int64) election.Status {
	self := &election.Participant{ID: "p0", Node: "_c_a-latch-0000000001", Session: 0x10, FencingToken: token, IsLeader: true}
	return election.Status{ID: "p0", Node: self.Node, SessionID: 0x10, IsLeader: true, FencingToken: token,
		LeaseRemaining: 6 * time.Second, Leader: self, Reason: "leader"}
}

func following() election.Status {
	other := &election.Participant{ID: "p1", Node: "_c_b-latch-0000000000", Session: 0x11}
	return election.Status{ID: "p0", Node: "_c_a-latch-0000000002", SessionID: 0x10, Leader: other, Reason: "following p1"}
}

// newElection returns a fake election at st whose Release, on a leader,
// makes it follow p1, and fails with ErrNotLeader on a follower.
func newElection(st election.Status) *electiontest.Fake {
	f := electiontest.New(st)
	f.Intercept(func(_ context.Context, call string) error {
		if call != "release" {
			return nil
		}
		if !f.Status().IsLeader {
			return election.ErrNotLeader
		}
		f.Set(following())
		return nil
	})
	return f
}

// released returns how many times Release was called.
func released(f *electiontest.Fake) int {
	n := 0
	for _, c := range f.Calls() {
		if c == "release" {
			n++
		}
	}
	return n
}

// fakeChild records what the Supervisor asks of it; the test ends it.
type fakeChild struct {
	env      []string
	deadline int64
	done     chan struct{}
	exit     Exit

	mu     sync.Mutex
	leases []int64
	stops  []time.Duration
	killed bool
}

func (c *fakeChild) Lease(d int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leases = append(c.leases, d)
}

func (c *fakeChild) Stop(kt time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stops = append(c.stops, kt)
}

func (c *fakeChild) Kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.killed {
		c.killed = true
		c.exit = Exit{Code: -1, Signal: "SIGKILL", Cause: CauseOrphaned}
		close(c.done)
	}
}

// end ends the command as ex says.
func (c *fakeChild) end(ex Exit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exit = ex
	close(c.done)
}

func (c *fakeChild) Exit() Exit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exit
}

func (c *fakeChild) Pid() int              { return 4242 }
func (c *fakeChild) Done() <-chan struct{} { return c.done }

func (c *fakeChild) stopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.stops) > 0
}

type fakeStarter struct{ started chan *fakeChild }

func (s *fakeStarter) Start(env []string, deadline int64) (Child, error) {
	c := &fakeChild{env: env, deadline: deadline, done: make(chan struct{})}
	s.started <- c
	return c, nil
}

type harness struct {
	t   *testing.T
	el  *electiontest.Fake
	st  *fakeStarter
	sup *Supervisor
	err chan error
}

func newHarness(t *testing.T, onExit OnExit, st election.Status) *harness {
	h := &harness{t: t, el: newElection(st), st: &fakeStarter{started: make(chan *fakeChild, 4)}, err: make(chan error, 1)}
	h.sup = New(h.el, h.st, Config{
		KillTimeout: 3 * time.Second, OnExit: onExit, Env: []string{"PATH=/bin", "ELECTD_LEADER_ID=stale"},
		ElectionPath: "/services/web", HTTPAddr: ":4040",
		Mono: func() int64 { return 1000 }, Refresh: 2 * time.Millisecond, MinRun: time.Hour, MaxBackoff: time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { h.err <- h.sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.err:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
	return h
}

func (h *harness) started() *fakeChild {
	h.t.Helper()
	select {
	case c := <-h.st.started:
		return c
	case <-time.After(10 * time.Second):
		h.t.Fatal("the command was not started")
		return nil
	}
}

func (h *harness) notStarted() {
	h.t.Helper()
	select {
	case <-h.st.started:
		h.t.Fatal("the command was started")
	case <-time.After(50 * time.Millisecond): // a few dozen refreshes
	}
}

// eventually waits until cond holds, failing the test after 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.For(t, 10*time.Second, what, cond)
}

func TestStartsWhileLeadingAndStopsOnLoss(t *testing.T) {
	h := newHarness(t, OnExitRelease, following())
	h.notStarted()
	h.el.Set(leading(77))
	c := h.started()
	for _, want := range []string{"PATH=/bin", "ELECTD_FENCING_TOKEN=77", "ELECTD_LEADER_ID=p0", "ELECTD_LEADER_NODE=_c_a-latch-0000000001",
		"ELECTD_LEADER_SESSION=0x10", "ELECTD_ELECTION_PATH=/services/web", "ELECTD_HTTP_ADDR=:4040"} {
		if !slices.Contains(c.env, want) {
			t.Errorf("env lacks %s: %v", want, c.env)
		}
	}
	if slices.Contains(c.env, "ELECTD_LEADER_ID=stale") {
		t.Errorf("env keeps the inherited ELECTD_LEADER_ID: %v", c.env)
	}
	if want := int64(1000 + 6*time.Second); c.deadline != want {
		t.Errorf("first deadline %d, want %d", c.deadline, want)
	}
	// The lease is handed on while it leads.
	st := leading(77)
	st.LeaseRemaining = 5 * time.Second
	h.el.Set(st)
	eventually(t, "a lease of 5s", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return slices.Contains(c.leases, 1000+int64(5*time.Second))
	})

	// Leadership lost (the node is still its own: the lease is handed on
	// until it ends): SIGTERM with the kill timeout.
	st.IsLeader, st.Reason, st.LeaseRemaining = false, "lease expired", 0
	h.el.Set(st)
	eventually(t, "a stop", c.stopped)
	c.mu.Lock()
	if c.stops[0] != 3*time.Second || c.leases[len(c.leases)-1] != 1000 {
		t.Errorf("stops %v, last lease %d", c.stops, c.leases[len(c.leases)-1])
	}
	c.mu.Unlock()
	c.end(Exit{Code: 143, Cause: CauseStopped})
	h.notStarted()
	if released(h.el) != 0 {
		t.Error("released after a stop")
	}
	// Leading again: a new run.
	h.el.Set(leading(90))
	if c := h.started(); !slices.Contains(c.env, "ELECTD_FENCING_TOKEN=90") {
		t.Errorf("second run's env: %v", c.env)
	}
}

func TestOnExitRelease(t *testing.T) {
	h := newHarness(t, OnExitRelease, leading(5))
	c := h.started()
	c.end(Exit{Code: 0, Cause: CauseExited})
	eventually(t, "a release", func() bool { return h.el.Status().Reason == "following p1" })
	h.notStarted()
	h.el.Set(leading(6)) // re-queued, leads again: after the (1ms) backoff
	h.started()
}

func TestOnExitRestart(t *testing.T) {
	h := newHarness(t, OnExitRestart, leading(5))
	c := h.started()
	c.end(Exit{Code: 1, Cause: CauseExited})
	h.started()
	if released(h.el) != 0 {
		t.Error("released")
	}
}

func TestOnExitExit(t *testing.T) {
	h := newHarness(t, OnExitExit, leading(5))
	c := h.started()
	c.end(Exit{Code: 3, Cause: CauseExited})
	var ee *ExitError
	select {
	case err := <-h.err:
		h.err <- err // for the cleanup
		if !errors.As(err, &ee) || ee.Exit.Code != 3 || !strings.Contains(err.Error(), "status 3") {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}

// The lease's end is no exit of the command's own: no on_exit action.
func TestLeaseKillIsNoExit(t *testing.T) {
	h := newHarness(t, OnExitExit, leading(5))
	c := h.started()
	h.el.Set(following())
	eventually(t, "a stop", c.stopped)
	c.end(Exit{Code: -1, Signal: "SIGKILL", Cause: CauseLease})
	h.notStarted()
	select {
	case err := <-h.err:
		t.Fatalf("Run returned %v", err)
	default:
	}
}

// Yield stops the command before f runs and starts it again after, when
// still leading.
func TestYield(t *testing.T) {
	h := newHarness(t, OnExitRelease, leading(5))
	c := h.started()
	ran := make(chan struct{})
	result := make(chan error)
	go func() {
		result <- h.sup.Yield(context.Background(), func(context.Context) error {
			close(ran)
			return errors.New("switchover refused")
		})
	}()
	eventually(t, "a stop", c.stopped)
	select {
	case <-ran:
		t.Fatal("f ran while the command ran")
	case <-time.After(20 * time.Millisecond):
	}
	c.end(Exit{Code: 143, Cause: CauseStopped})
	<-ran
	if err := <-result; err == nil || err.Error() != "switchover refused" {
		t.Errorf("Yield returned %v", err)
	}
	h.started() // f failed: it still leads, the command runs again
}

func TestStopIsForGood(t *testing.T) {
	h := newHarness(t, OnExitRestart, leading(5))
	c := h.started()
	stopped := make(chan error)
	go func() { stopped <- h.sup.Stop(context.Background()) }()
	eventually(t, "a stop", c.stopped)
	c.end(Exit{Code: 0, Cause: CauseStopped})
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	h.notStarted()
	if err := h.sup.Yield(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	h.notStarted()
}

func TestRunEndKillsTheCommand(t *testing.T) {
	el := newElection(leading(5))
	st := &fakeStarter{started: make(chan *fakeChild, 1)}
	sup := New(el, st, Config{Mono: func() int64 { return 0 }, Refresh: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { errc <- sup.Run(ctx) }()
	c := <-st.started
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !c.killed {
		t.Error("the command was not killed")
	}
	// Yield and Stop do not wait for a Run that ended.
	if err := sup.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A command that ends on its own before MinRun waits before its next
// start, 1s and then twice as long, on the clock it was given.
func TestQuickEndsBackOffOnTheClock(t *testing.T) {
	clk := clocktest.NewFake(time.Unix(1000, 0))
	el := newElection(leading(5))
	st := &fakeStarter{started: make(chan *fakeChild, 1)}
	sup := New(el, st, Config{OnExit: OnExitRestart, Mono: func() int64 { return 0 }, Refresh: time.Millisecond,
		MinRun: 10 * time.Second, MaxBackoff: 30 * time.Second, Clock: clk})
	h := &harness{t: t, el: el, st: st, sup: sup, err: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { h.err <- sup.Run(ctx) }()
	defer func() {
		cancel()
		<-h.err
	}()
	for _, wait := range []time.Duration{time.Second, 2 * time.Second} {
		c := h.started()
		clk.Advance(time.Second) // ran 1s, below MinRun
		c.end(Exit{Code: 1, Cause: CauseExited})
		eventually(t, "the back-off's timer", func() bool { return clk.Pending() == 1 })
		clk.Advance(wait - time.Millisecond)
		h.notStarted()
		clk.Advance(time.Millisecond)
	}
	h.started()
}
