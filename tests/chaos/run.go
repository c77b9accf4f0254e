package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/ledger"
	"github.com/electd/electd/tests/harness/zktest"
)

// spec describes one run of one fault in one mode.
type spec struct {
	Fault     string // summary label
	Name      string // subtest name
	Mode      string // latch, selector, race
	OnSuspend string // hold, step-down
	Session   time.Duration
	Term      time.Duration // selector mode: term length; 0 holds
	Grace     time.Duration // shutdown_grace
	N         int           // participants at the start
	Index     int           // which run of this fault and mode
	Seed      int64         // churn only
	PeerRelay bool          // a relay in front of every participant's peer port, for the faults that cut peers apart
	fn        func(*run)
}

func (s spec) modeLabel() string { return s.Mode + "/" + s.OnSuspend }

// adminToken is every participant's http.admin_token.
const adminToken = "chaos-admin-token"

// run is one fault injected into one group of electd participants, watched
// by one observer. Its methods fail the test with a precise account.
type run struct {
	t    *testing.T
	spec spec
	env  *env
	bin  string
	dir  string
	obs  *electdtest.Observer
	path string

	bg sync.WaitGroup // goroutines that log: teardown waits for them

	mu      sync.Mutex
	procs   []*electdtest.Proc         // every process started, in order
	proxies map[string][]*zktest.Proxy // by participant id, in members() order
	leaving map[string]bool            // asked to stop, maybe not yet exited
	parts   map[string]*participant    // by participant id: application, proxy, relay (traffic.go)
	out     map[string]bool            // taken out of the load
	gone    map[string][]time.Time     // when each was taken out
	load    *ledger.Load
	nextID  int
	events  []event
	windows []invariant.Interval // windows worth showing in a failure report

	timeout      time.Duration // negotiated session timeout
	restG        int           // most goroutines a participant held at rest (idle.go)
	alwaysReport bool          // report even when the run passed
	res          Result
	began        time.Time
}

type event struct {
	at   time.Duration
	what string
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// runDir is a directory of base for a run of the test name that no earlier
// run in this process used (go test -count=N runs each case N times): the
// applications' ledgers live there and request ids start with its name, so
// a second run reading the first's ledgers found every POST run twice.
// It makes the directory; the first that does not exist yet is taken.
func runDir(base, name string) string {
	dir := filepath.Join(base, name)
	for i := 2; ; i++ {
		if err := os.Mkdir(dir, 0o755); err == nil || !os.IsExist(err) {
			return dir // another error shows where the directory is used
		}
		dir = filepath.Join(base, fmt.Sprintf("%s-%d", name, i))
	}
}

func newRun(t *testing.T, e *env, bin, baseDir string, sp spec, sum *Summary, poll time.Duration) *run {
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	r := &run{
		t:       t,
		spec:    sp,
		env:     e,
		bin:     bin,
		dir:     runDir(baseDir, name),
		obs:     electdtest.NewObserver(poll, 250*time.Millisecond),
		path:    fmt.Sprintf("/chaos/%s-%d", strings.ToLower(name), time.Now().UnixNano()%1e9),
		proxies: map[string][]*zktest.Proxy{},
		leaving: map[string]bool{},
		parts:   map[string]*participant{},
		out:     map[string]bool{},
		gone:    map[string][]time.Time{},
		timeout: sp.Session,
		res:     Result{Fault: sp.Fault, Mode: sp.modeLabel()},
		began:   time.Now(),
	}
	t.Logf("run %s: election path %s, logs in %s", t.Name(), r.path, r.dir)
	t.Cleanup(func() { r.teardown(sum) })
	return r
}

// bound is the liveness bound: negotiated session timeout + 1.5 x tickTime + 1 s.
func (r *run) bound() time.Duration { return invariant.LivenessBound(r.timeout, r.env.tick) }

func (r *run) now() time.Duration { return r.obs.Now() }

func (r *run) event(format string, args ...any) {
	e := event{at: r.now(), what: fmt.Sprintf(format, args...)}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	r.t.Logf("%10s  %s", invariant.Ms(e.at), e.what)
}

// errorf fails the run, keeping [from, to] for the report.
func (r *run) errorf(w invariant.Interval, format string, args ...any) {
	r.t.Helper()
	r.mu.Lock()
	r.res.Failed = true
	r.windows = append(r.windows, w)
	r.mu.Unlock()
	r.t.Errorf("%s: "+format, append([]any{invariant.Ms(r.now())}, args...)...)
}

// fatalf fails the run and stops it.
func (r *run) fatalf(format string, args ...any) {
	r.t.Helper()
	r.mu.Lock()
	r.res.Failed = true
	r.mu.Unlock()
	r.t.Fatalf("%s: "+format, append([]any{invariant.Ms(r.now())}, args...)...)
}

func (r *run) ctx(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// holdUntil blocks until the observer's clock reaches at: how long a fault
// lasts. Nothing is asserted on the strength of it.
func (r *run) holdUntil(at time.Duration) {
	if d := at - r.now(); d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		<-timer.C
	}
}

// start launches one participant dialing its own proxies, one per server,
// the pinned server's first; while it joins, its proxies to every other
// server refuse, so its session lives on the pinned server. pin < 0 rotates
// the first server by participant number and pins nothing.
func (r *run) start(pin int) *electdtest.Proc {
	r.t.Helper()
	r.mu.Lock()
	r.nextID++
	id := fmt.Sprintf("p%d", r.nextID)
	r.mu.Unlock()
	members := r.env.members()
	proxies := make([]*zktest.Proxy, len(members))
	for i, m := range members {
		px, err := zktest.NewProxy(m.Addr())
		if err != nil {
			r.fatalf("proxy to %s: %v", m.Addr(), err)
		}
		proxies[i] = px
	}
	first := pin
	if first < 0 {
		first = (r.nextID - 1) % len(members)
	}
	var servers []string
	for k := range members {
		i := (first + k) % len(members)
		servers = append(servers, proxies[i].Addr())
		if pin >= 0 && i != pin {
			proxies[i].Refuse()
		}
	}
	r.mu.Lock()
	r.proxies[id] = proxies
	r.mu.Unlock()
	addr, err := electdtest.FreeAddr()
	if err != nil {
		r.fatalf("%v", err)
	}
	cfg := &electdtest.Config{
		ID:              id,
		Advertise:       addr,
		Servers:         servers,
		SessionTimeout:  r.spec.Session,
		Path:            r.path,
		Mode:            r.spec.Mode,
		OnSuspend:       r.spec.OnSuspend,
		Term:            r.spec.Term,
		AdminToken:      adminToken,
		LogLevel:        "debug",
		LogFormat:       "json",
		ShutdownGrace:   r.spec.Grace,
		ShutdownTimeout: 10 * time.Second,
	}
	r.proxyConfig(id, cfg)
	p, err := electdtest.Launch(r.bin, electdtest.Spec{Dir: filepath.Join(r.dir, id), Addr: addr, Config: cfg})
	if err != nil {
		r.fatalf("%v", err)
	}
	r.mu.Lock()
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	ctx, cancel := r.ctx(15 * time.Second)
	defer cancel()
	if err := p.WaitHTTP(ctx, "/healthz", 200); err != nil {
		r.fatalf("%v", err)
	}
	r.obs.Add(id, p.Addr)
	if err := p.WaitHTTP(ctx, "/readyz", 200); err != nil {
		r.fatalf("%v", err)
	}
	if pin >= 0 {
		for i, px := range proxies {
			if i != pin {
				px.Heal()
			}
		}
	}
	r.retarget()
	r.event("started %s (pid %d, http %s, proxy %s before its %s application, first server %d, pinned %v)",
		id, p.Pid(), p.Addr, cfg.ProxyListen, r.part(p).app.Lang, first, pin >= 0)
	return p
}

// setup starts the first participant, waits for it to lead, then starts
// n-1 more. pin gives the server index for participant i (0-based), or -1.
func (r *run) setup(n int, pin func(i int) int) *electdtest.Proc {
	r.t.Helper()
	if pin == nil {
		pin = func(int) int { return -1 }
	}
	first := r.start(pin(0))
	ctx, cancel := r.ctx(r.bound() + 10*time.Second)
	defer cancel()
	if err := first.WaitHTTP(ctx, "/healthz/leader", 200); err != nil {
		r.fatalf("first participant never led: %v", err)
	}
	if negotiated := first.SessionTimeout(ctx); negotiated > 0 {
		r.timeout = negotiated
	}
	for i := 1; i < n; i++ {
		r.start(pin(i))
	}
	l := r.waitSingleLeader(r.bound())
	r.warmUp()
	r.restGoroutines()
	r.startTraffic()
	r.event("setup done: %d participants, leader %s, negotiated session timeout %s, liveness bound %s",
		n, l.Name, r.timeout, r.bound())
	return l
}

// live returns the participants that run and are not leaving.
func (r *run) live() []*electdtest.Proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*electdtest.Proc
	for _, p := range r.procs {
		if p.Alive() && !r.leaving[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

func (r *run) proxiesOf(p *electdtest.Proc) []*zktest.Proxy {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proxies[p.Name]
}

// leaders asks every live, running participant once.
func (r *run) leaders(ctx context.Context) []*electdtest.Proc {
	var out []*electdtest.Proc
	for _, p := range r.live() {
		if !p.Paused() && p.IsLeader(ctx) {
			out = append(out, p)
		}
	}
	return out
}

// waitSingleLeader waits until exactly one live participant answers 200,
// twice in a row, and returns it.
func (r *run) waitSingleLeader(d time.Duration) *electdtest.Proc {
	r.t.Helper()
	ctx, cancel := r.ctx(d)
	defer cancel()
	var prev *electdtest.Proc
	var last []*electdtest.Proc
	for {
		last = r.leaders(ctx)
		if len(last) == 1 && last[0] == prev {
			return prev
		}
		prev = nil
		if len(last) == 1 {
			prev = last[0]
		}
		select {
		case <-ctx.Done():
			var ids []string
			for _, p := range last {
				ids = append(ids, p.Name)
			}
			r.fatalf("no single leader within %s: leaders %v", d, ids)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// stopAsync sends SIGTERM to p and stops observing it once it has exited.
func (r *run) stopAsync(p *electdtest.Proc, wg *sync.WaitGroup) {
	r.away(p)
	r.mu.Lock()
	r.leaving[p.Name] = true
	r.mu.Unlock()
	wg.Add(1)
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		defer wg.Done()
		if err := p.Stop(15 * time.Second); err != nil {
			r.event("%s: SIGTERM exit: %v", p.Name, err)
		}
		r.obs.Remove(p.Name)
	}()
}

// kill sends SIGKILL to p and stops observing it.
func (r *run) kill(p *electdtest.Proc) {
	r.away(p)
	r.mu.Lock()
	r.leaving[p.Name] = true
	r.mu.Unlock()
	p.Kill()
	r.obs.Remove(p.Name)
}

// window is a span of the observer's clock worth showing in a report.
func window(from, to time.Duration) invariant.Interval { return invariant.Interval{From: from, To: to} }
