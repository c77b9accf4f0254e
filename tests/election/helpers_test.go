package election_test

// The helpers of the integration tests: their timings, waits, and participants (each an
// Elector on its own session, optionally through its own proxy). harness_test.go puts
// participants on one election path and waits on what they report; zkdirect_test.go is
// the tests' own ZooKeeper client, to look at the nodes; sampler_test.go samples every
// participant every 2 ms for the whole test and fails it when two were leading at once.

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

const (
	sessionTimeout = 2 * time.Second
	tickTime       = 200 * time.Millisecond // sessions of 0.4 s to 4 s
	pollEvery      = 5 * time.Millisecond
	sampleEvery    = 2 * time.Millisecond

	// Deadlines of the waits below: they stop a hang and check no speed (the machine may
	// be loaded; the chaos suite checks the liveness bound, benchmarks the speed). The
	// times are logged.
	agreeWithin = 10 * time.Second // every follower names a new leader
	liveWithin  = 20 * time.Second // a leader, a join, a node after a change, an expiry or an outage

	// renewSlack is what a participant back on a server may need to renew its lease:
	// a round-trip on a loaded machine. An outage that ends closer than this to the
	// lease's end may or may not let the lease lapse.
	renewSlack = time.Second
)

// startZK starts one standalone server for a whole test; subtests share it
// on different paths.
func startZK(t *testing.T) *zktest.Ensemble {
	t.Helper()
	return zktest.Start(t, zktest.Options{Servers: 1, TickTime: tickTime})
}

// waitFor polls cond until it holds, and fails the test when it did not
// hold at a time d or more after the start (the one poller, tests/harness/wait).
func waitFor(t testing.TB, d time.Duration, desc string, cond func() bool) {
	t.Helper()
	wait.For(t, d, desc, cond)
}

// holdFor polls cond every few milliseconds for d and fails the test the
// first time it does not hold.
func holdFor(t testing.TB, d time.Duration, desc string, cond func() bool) {
	t.Helper()
	if after, ok := holds(d, cond); !ok {
		t.Fatalf("%s stopped holding after %v", desc, after.Round(time.Millisecond))
	}
}

// holds polls cond every few milliseconds for d: true if it held
// throughout, else false with how long after the start it did not.
func holds(d time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if !cond() {
			return time.Since(start), false
		}
		if time.Since(start) > d {
			return 0, true
		}
		time.Sleep(pollEvery)
	}
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ---------------------------------------------------------------------------
// participants

type opts struct {
	id    string // default: the participant's name (p0, p1, ...)
	proxy bool   // connect through a proxy of its own to servers[0]
	// chain puts a second proxy in front of the first: the inner one
	// (participant.inner) drops a create, the outer one (participant.proxy)
	// refuses the reconnect (see releaseLosingReply).
	chain   bool
	servers []string // default: every server of the ensemble
	session func(*zksession.Config)
	config  func(*election.Config)
	noRun   bool // New but do not Run yet (call run)
}

type participant struct {
	h     *harness
	name  string
	id    string
	sess  *zksession.Session
	el    *election.Elector
	proxy *zktest.Proxy // the proxy the session dials, if any
	inner *zktest.Proxy // with opts.chain: the proxy between proxy and the server

	rec *recorder // what the session and the elector reported

	cancel  context.CancelFunc
	started atomic.Bool
	runDone chan struct{}
	runErr  error // set before runDone is closed

	stopped  atomic.Bool
	stopOnce sync.Once
}

func (p *participant) String() string { return p.name }

func (p *participant) status() election.Status { return p.el.Status() }

func (p *participant) leads() bool { return p.el.Status().IsLeader }

// run starts Run in its own goroutine.
func (p *participant) run() {
	if !p.started.CompareAndSwap(false, true) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.runDone)
		p.runErr = p.el.Run(ctx)
	}()
}

// runReturned reports whether Run has returned.
func (p *participant) runReturned() bool { return wait.Closed(p.runDone) }

// resignClose resigns (deleting the node) and closes the session, as a
// graceful shutdown does.
func (p *participant) resignClose(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.el.Resign(ctx); err != nil {
		t.Errorf("%s: Resign: %v", p, err)
	}
	if p.started.Load() {
		select {
		case <-p.runDone:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: Run did not return within 10s of Resign", p)
		}
	}
	p.stop(t)
}

// stop cancels Run, waits for it and closes the session and the proxy. The
// participant stays sampled by the checker.
func (p *participant) stop(t testing.TB) {
	p.stopOnce.Do(func() {
		p.stopped.Store(true)
		if p.cancel != nil {
			p.cancel()
		}
		if p.started.Load() {
			select {
			case <-p.runDone:
			case <-time.After(10 * time.Second):
				t.Errorf("%s: Run did not return within 10s of its context ending", p)
			}
		}
		p.sess.Close()
		p.closeProxies()
	})
}

func (p *participant) closeProxies() {
	if p.proxy != nil {
		p.proxy.Close()
	}
	if p.inner != nil {
		p.inner.Close()
	}
}

// watchFor polls cond in a tight loop, for conditions too short-lived for
// the checker's period (a reconnect can take a few ms). seen reports whether
// cond held at some point; stop ends the watch (it also ends at cleanup, and
// once cond held).
func watchFor(t testing.TB, cond func() bool) (seen func() bool, stop func()) {
	var hit atomic.Bool
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			if cond() {
				hit.Store(true)
				return
			}
			runtime.Gosched()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() { close(quit) })
		<-done
	}
	t.Cleanup(stop)
	return hit.Load, stop
}

// eachUntilEnd runs f in one goroutine per element of xs until the test
// ends: its cleanup cancels ctx and waits for them all.
func eachUntilEnd[T any](t testing.TB, xs []T, f func(ctx context.Context, x T)) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, x := range xs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx, x)
		}()
	}
}

// releaseLosingReply releases p's node so that it joins again, with the
// inner proxy armed to cut the connection right after that create reaches
// the server, and the outer proxy refusing connections from then on: the
// create is applied, its reply lost, and the client stays disconnected until
// Heal. It returns once the outer proxy refuses.
func (p *participant) releaseLosingReply(t testing.TB) {
	t.Helper()
	if p.inner == nil {
		t.Fatalf("%s: releaseLosingReply needs opts.chain", p)
	}
	base, _ := p.inner.Counts()
	p.inner.DropAfterCreate()
	refused := make(chan struct{})
	go func() {
		defer close(refused)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if c, _ := p.inner.Counts(); c > base {
				p.proxy.Refuse()
				return
			}
			runtime.Gosched()
		}
	}()
	if err := p.el.Release(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatalf("%s: Release: %v", p, err)
	}
	<-refused
}

// recorder counts what a participant's session and elector report through
// their Recorder hooks: events too short for polling to see (a reconnect
// of a few ms) still leave a count here.
type recorder struct {
	acquired, changed, expired, reconnects atomic.Int64

	mu   sync.Mutex
	lost []election.LossReason
}

func (r *recorder) LeadershipAcquired()        { r.acquired.Add(1) }
func (r *recorder) LeaderChanged()             { r.changed.Add(1) }
func (r *recorder) DuplicateID(string)         {}
func (r *recorder) SessionExpired()            { r.expired.Add(1) }
func (r *recorder) Reconnected()               { r.reconnects.Add(1) }
func (r *recorder) LeaseRenewed(time.Duration) {}

func (r *recorder) LeadershipLost(reason election.LossReason) {
	r.mu.Lock()
	r.lost = append(r.lost, reason)
	r.mu.Unlock()
}

func (r *recorder) losses() []election.LossReason {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]election.LossReason(nil), r.lost...)
}
