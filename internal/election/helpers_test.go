package election_test

// The harness for the integration tests: participants on one election path,
// each with its own session (optionally through its own proxy), a direct
// ZooKeeper client to look at the nodes, and a checker that samples every
// participant every 2 ms for the whole test and fails it the moment two of
// them report IsLeader at once.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/zktest"
)

const (
	sessionTimeout = 2 * time.Second
	tickTime       = 200 * time.Millisecond // sessions of 0.4 s to 4 s
	pollEvery      = 5 * time.Millisecond
	sampleEvery    = 2 * time.Millisecond
	agreeWithin    = time.Second // followers name a new leader this fast
)

// startZK starts one standalone server for a whole test; subtests share it
// on different paths.
func startZK(t *testing.T) *zktest.Ensemble {
	t.Helper()
	return zktest.Start(t, zktest.Options{Servers: 1, TickTime: tickTime})
}

// waitFor polls cond every few milliseconds until it holds, and fails the
// test when it has not held within d.
func waitFor(t testing.TB, d time.Duration, desc string, cond func() bool) {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("timed out after %v waiting for %s", d, desc)
		}
		time.Sleep(pollEvery)
	}
}

// holdFor polls cond every few milliseconds for d and fails the test the
// first time it does not hold.
func holdFor(t testing.TB, d time.Duration, desc string, cond func() bool) {
	t.Helper()
	start := time.Now()
	for {
		if !cond() {
			t.Fatalf("%s stopped holding after %v", desc, time.Since(start).Round(time.Millisecond))
		}
		if time.Since(start) > d {
			return
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
	// refuses the reconnect (see refuseAfterCreate).
	chain   bool
	servers []string // default: every server of the ensemble
	session func(*election.SessionConfig)
	config  func(*election.Config)
	noRun   bool // New but do not Run yet (call run)
}

type participant struct {
	h     *harness
	name  string
	id    string
	sess  *election.Session
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
func (p *participant) runReturned() bool {
	select {
	case <-p.runDone:
		return true
	default:
		return false
	}
}

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

// refuseAfterCreate arms the inner proxy to cut the connection right after
// the next create has reached the server, and makes the outer proxy refuse
// connections from the moment the inner one has seen it: the create is
// applied, its reply lost, and the client stays disconnected until Heal.
// The returned channel is closed once the outer proxy refuses.
func (p *participant) refuseAfterCreate(t testing.TB) <-chan struct{} {
	t.Helper()
	if p.inner == nil {
		t.Fatalf("%s: refuseAfterCreate needs opts.chain", p)
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
	return refused
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

// ---------------------------------------------------------------------------
// harness

type harness struct {
	t    *testing.T
	ens  *zktest.Ensemble
	path string
	mode election.Mode

	mu  sync.Mutex
	ps  []*participant
	seq int

	zkOnce sync.Once
	zkc    *zk.Conn

	chk *checker
}

// newHarness sets up an election on path and starts the leader checker; the
// test's cleanup stops everything (and dumps every participant's view first
// when the test failed).
func newHarness(t *testing.T, ens *zktest.Ensemble, path string, mode election.Mode) *harness {
	t.Helper()
	h := &harness{t: t, ens: ens, path: path, mode: mode}
	h.chk = newChecker(t, h)
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, p := range h.all() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.stop(t)
			}()
		}
		wg.Wait()
		h.chk.close()
	})
	t.Cleanup(func() {
		if t.Failed() {
			h.dump()
		}
	})
	return h
}

func (h *harness) servers() []string {
	return strings.Split(h.ens.ConnectString(), ",")
}

// tryStart connects a participant and (unless o.noRun) runs it. Safe to call
// from any goroutine.
func (h *harness) tryStart(o opts) (*participant, error) {
	h.mu.Lock()
	name := fmt.Sprintf("p%d", h.seq)
	h.seq++
	h.mu.Unlock()
	p := &participant{h: h, name: name, id: o.id, runDone: make(chan struct{}), rec: &recorder{}}
	if p.id == "" {
		p.id = name
	}
	servers := o.servers
	if servers == nil {
		servers = h.servers()
	}
	if o.proxy || o.chain {
		px, err := zktest.NewProxy(servers[0])
		if err != nil {
			return nil, fmt.Errorf("%s: proxy: %w", name, err)
		}
		p.proxy = px
		if o.chain {
			outer, err := zktest.NewProxy(px.Addr())
			if err != nil {
				px.Close()
				return nil, fmt.Errorf("%s: proxy: %w", name, err)
			}
			p.proxy, p.inner = outer, px
		}
		servers = []string{p.proxy.Addr()}
	}
	scfg := election.SessionConfig{Servers: servers, SessionTimeout: sessionTimeout, Recorder: p.rec}
	if os.Getenv("ELECTD_TEST_LOG") != "" {
		// Debugging aid: every participant's log on stderr.
		scfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("p", name)
	}
	if o.session != nil {
		o.session(&scfg)
	}
	sess, err := election.Connect(scfg)
	if err != nil {
		p.closeProxies()
		return nil, fmt.Errorf("%s: Connect: %w", name, err)
	}
	cfg := election.Config{Path: h.path, Mode: h.mode, ID: p.id, Recorder: p.rec}
	if o.config != nil {
		o.config(&cfg)
	}
	el, err := election.New(sess, cfg)
	if err != nil {
		sess.Close()
		p.closeProxies()
		return nil, fmt.Errorf("%s: New: %w", name, err)
	}
	p.sess, p.el = sess, el
	h.mu.Lock()
	h.ps = append(h.ps, p)
	h.mu.Unlock()
	if !o.noRun {
		p.run()
	}
	return p, nil
}

func (h *harness) start(o opts) *participant {
	h.t.Helper()
	p, err := h.tryStart(o)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// startJoined starts n participants one after the other, each once the one
// before has joined, so that their queue order is their start order.
func (h *harness) startJoined(n int, o opts) []*participant {
	h.t.Helper()
	out := make([]*participant, n)
	for i := range out {
		p := h.start(o)
		waitFor(h.t, 15*time.Second, p.name+" joined", func() bool { return p.status().Joined })
		out[i] = p
	}
	return out
}

// startN starts n participants at once.
func (h *harness) startN(n int, o opts) []*participant {
	h.t.Helper()
	out := make([]*participant, n)
	for i := range out {
		out[i] = h.start(o)
	}
	return out
}

// all returns every participant ever started, stopped ones included.
func (h *harness) all() []*participant {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*participant(nil), h.ps...)
}

// live returns the participants not stopped.
func (h *harness) live() []*participant {
	var out []*participant
	for _, p := range h.all() {
		if !p.stopped.Load() {
			out = append(out, p)
		}
	}
	return out
}

// leaders returns who reports IsLeader now.
func (h *harness) leaders() []*participant {
	var out []*participant
	for _, p := range h.all() {
		if p.leads() {
			out = append(out, p)
		}
	}
	return out
}

func (h *harness) waitAllJoined(d time.Duration) {
	h.t.Helper()
	waitFor(h.t, d, "every live participant joined", func() bool {
		for _, p := range h.live() {
			if !p.status().Joined {
				return false
			}
		}
		return true
	})
}

// waitOneLeader waits until exactly one participant leads and returns it.
func (h *harness) waitOneLeader(d time.Duration) *participant {
	h.t.Helper()
	return h.waitLeaderOtherThan(d)
}

// waitLeaderOtherThan waits until exactly one participant leads and it is
// none of not.
func (h *harness) waitLeaderOtherThan(d time.Duration, not ...*participant) *participant {
	h.t.Helper()
	var got *participant
	desc := "exactly one leader"
	if len(not) > 0 {
		desc += fmt.Sprintf(", other than %v", not)
	}
	waitFor(h.t, d, desc, func() bool {
		ls := h.leaders()
		if len(ls) != 1 {
			return false
		}
		for _, n := range not {
			if ls[0] == n {
				return false
			}
		}
		got = ls[0]
		return true
	})
	return got
}

// waitAgreement checks the leader's own view (token = czxid of its node) and
// waits up to agreeWithin until every live participant (but those in cut
// off, which cannot know) names it, with the same node and fencing token.
// It returns the token.
func (h *harness) waitAgreement(l *participant, cutOff ...*participant) int64 {
	h.t.Helper()
	st := l.status()
	if !st.IsLeader {
		h.t.Fatalf("%s: no longer leads (%s)", l, st.Reason)
	}
	tok := st.FencingToken
	if tok <= 0 {
		h.t.Fatalf("%s leads with fencing token %d, want > 0", l, tok)
	}
	if st.Leader == nil || st.Leader.ID != l.id || st.Leader.Node != st.Node || st.Leader.FencingToken != tok {
		h.t.Fatalf("%s leads (node %s, token %d) but its Leader is %s", l, st.Node, tok, fmtParticipant(st.Leader))
	}
	if _, stat, err := h.zk().Get(h.path + "/" + st.Node); err != nil {
		h.t.Fatalf("%s leads with node %s, which cannot be read: %v", l, st.Node, err)
	} else if stat.Czxid != tok {
		h.t.Fatalf("%s leads with fencing token %d, but its node's czxid is %d", l, tok, stat.Czxid)
	} else if stat.EphemeralOwner != st.SessionID {
		h.t.Fatalf("%s leads with node %s owned by session 0x%x, its session is 0x%x", l, st.Node, stat.EphemeralOwner, st.SessionID)
	}
	start := time.Now()
	waitFor(h.t, agreeWithin, fmt.Sprintf("every participant to name %s (node %s, token %d) as leader", l, st.Node, tok), func() bool {
		for _, p := range h.live() {
			if slices.Contains(cutOff, p) {
				continue
			}
			s := p.status()
			if s.Leader == nil || s.Leader.ID != l.id || s.Leader.Node != st.Node || s.Leader.FencingToken != tok || s.Leader.Session != st.SessionID {
				return false
			}
		}
		return true
	})
	h.t.Logf("all %d participants name %s (token %d) within %v", len(h.live())-len(cutOff), l, tok, time.Since(start).Round(time.Millisecond))
	return tok
}

// waitQuiet waits until no live participant's counters change for quiet.
func (h *harness) waitQuiet(quiet, d time.Duration) {
	h.t.Helper()
	snap := h.counters()
	since := time.Now()
	waitFor(h.t, d, "counters to settle", func() bool {
		now := h.counters()
		for p, c := range now {
			if snap[p] != c {
				snap, since = now, time.Now()
				return false
			}
		}
		return time.Since(since) >= quiet
	})
}

func (h *harness) counters() map[*participant]election.Counters {
	out := map[*participant]election.Counters{}
	for _, p := range h.live() {
		out[p] = p.el.Counters()
	}
	return out
}

// ---------------------------------------------------------------------------
// direct ZooKeeper access

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// dialZK connects a plain go-zookeeper client and waits for its session.
func dialZK(t testing.TB, servers []string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(servers, 4*time.Second, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("direct zk client: %v", err)
	}
	t.Cleanup(c.Close)
	waitFor(t, 15*time.Second, "the direct zk client's session", func() bool { return c.State() == zk.StateHasSession })
	return c
}

// zk returns the harness's direct client (no auth).
func (h *harness) zk() *zk.Conn {
	h.zkOnce.Do(func() { h.zkc = dialZK(h.t, h.servers()) })
	return h.zkc
}

type znode struct {
	name  string
	id    string
	owner int64
	czxid int64
}

func (n znode) String() string {
	return fmt.Sprintf("%s(id=%s owner=0x%x czxid=%d)", n.name, n.id, n.owner, n.czxid)
}

// readQueue lists the path's children in Curator's order with their data
// and stat. A missing path is an empty queue. Children that vanish while
// being read are skipped.
func readQueue(c *zk.Conn, path string, mode election.Mode) ([]znode, error) {
	kids, _, err := c.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tag := "latch-"
	if mode == election.ModeSelector {
		tag = "lock-"
	}
	key := func(s string) string {
		if i := strings.LastIndex(s, tag); i >= 0 {
			return s[i+len(tag):]
		}
		return s
	}
	sort.SliceStable(kids, func(i, j int) bool { return key(kids[i]) < key(kids[j]) })
	var out []znode
	for _, k := range kids {
		data, st, err := c.Get(path + "/" + k)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, znode{name: k, id: string(data), owner: st.EphemeralOwner, czxid: st.Czxid})
	}
	return out, nil
}

func (h *harness) queue() []znode {
	h.t.Helper()
	q, err := readQueue(h.zk(), h.path, h.mode)
	if err != nil {
		h.t.Fatalf("reading %s: %v", h.path, err)
	}
	return q
}

// nodesConsistent says whether the path holds exactly one node per live
// participant, each owned by that participant's current session and named
// as its Status().Node, and nothing else. In race mode only the leader's.
func (h *harness) nodesConsistent() (bool, string) {
	q, err := readQueue(h.zk(), h.path, h.mode)
	if err != nil {
		return false, err.Error()
	}
	live := h.live()
	if h.mode == election.ModeRace {
		ls := h.leaders()
		if len(ls) != 1 || len(q) != 1 || q[0].owner != ls[0].sess.ID() {
			return false, fmt.Sprintf("race: leaders %v, nodes %v", ls, q)
		}
		return true, ""
	}
	if len(q) != len(live) {
		return false, fmt.Sprintf("%d nodes for %d participants: %v", len(q), len(live), q)
	}
	owners := map[int64]*participant{}
	for _, p := range live {
		owners[p.sess.ID()] = p
	}
	seen := map[*participant]bool{}
	for _, n := range q {
		p := owners[n.owner]
		if p == nil {
			return false, fmt.Sprintf("node %v is owned by no live participant's session", n)
		}
		if seen[p] {
			return false, fmt.Sprintf("%s owns two nodes: %v", p, q)
		}
		seen[p] = true
		if st := p.status(); st.Node != n.name {
			return false, fmt.Sprintf("%s owns %v but reports node %q", p, n, st.Node)
		}
	}
	return true, ""
}

// waitNodesConsistent waits for nodesConsistent, then checks it keeps
// holding for a while (a late orphan would break it).
func (h *harness) waitNodesConsistent(d, hold time.Duration) {
	h.t.Helper()
	var why string
	start := time.Now()
	for {
		ok, w := h.nodesConsistent()
		if ok {
			break
		}
		why = w
		if time.Since(start) > d {
			h.t.Fatalf("nodes not one per participant after %v: %s", d, why)
		}
		time.Sleep(pollEvery)
	}
	holdFor(h.t, hold, "one node per participant", func() bool {
		ok, w := h.nodesConsistent()
		if !ok {
			h.t.Logf("nodes: %s", w)
		}
		return ok
	})
}

// newUUID makes a random 36-character dashed UUID, as Curator writes them.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ensurePath creates path and its parents as persistent nodes.
func ensurePath(t testing.TB, c *zk.Conn, path string) {
	t.Helper()
	cur := ""
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		cur += "/" + seg
		if _, err := c.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", cur, err)
		}
	}
}

// ---------------------------------------------------------------------------
// the leader checker

type transition struct {
	at     time.Time
	p      *participant
	leader bool
	state  election.State
	token  int64
	node   string
	reason string
}

type sample struct {
	p  *participant
	st election.Status
	at time.Time
}

type checker struct {
	t    *testing.T
	h    *harness
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu            sync.Mutex
	last          map[*participant]election.Status
	lastTrue      map[*participant]time.Time
	events        []transition
	tolerateUntil time.Time
	overlaps      []string
	violations    int
}

func newChecker(t *testing.T, h *harness) *checker {
	c := &checker{
		t: t, h: h,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		last:     map[*participant]election.Status{},
		lastTrue: map[*participant]time.Time{},
	}
	go c.loop()
	return c
}

func (c *checker) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

func (c *checker) loop() {
	defer close(c.done)
	tk := time.NewTicker(sampleEvery)
	defer tk.Stop()
	for {
		c.sample()
		select {
		case <-c.stop:
			c.sample()
			return
		case <-tk.C:
		}
	}
}

// sample reads every participant once. Two leaders seen in one pass may be a
// handover that fell between the two reads, so the earlier one is read
// again: if it still leads, with the same token and session, after the later
// one was seen leading, the two overlapped.
func (c *checker) sample() {
	var leaders []sample
	for _, p := range c.h.all() {
		s := sample{p: p, st: p.el.Status(), at: time.Now()}
		c.record(s)
		if s.st.IsLeader {
			leaders = append(leaders, s)
		}
	}
	for i := 0; i+1 < len(leaders); i++ {
		x, y := leaders[i], leaders[i+1]
		again := sample{p: x.p, st: x.p.el.Status(), at: time.Now()}
		c.record(again)
		if again.st.IsLeader && again.st.FencingToken == x.st.FencingToken && again.st.SessionID == x.st.SessionID {
			c.violation(again, y)
		}
	}
}

func (c *checker) record(s sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, seen := c.last[s.p]
	c.last[s.p] = s.st
	if s.st.IsLeader {
		c.lastTrue[s.p] = s.at
	}
	if !seen || prev.IsLeader != s.st.IsLeader || prev.State != s.st.State {
		c.events = append(c.events, transition{
			at: s.at, p: s.p, leader: s.st.IsLeader, state: s.st.State,
			token: s.st.FencingToken, node: s.st.Node, reason: s.st.Reason,
		})
	}
}

func (c *checker) violation(x, y sample) {
	msg := fmt.Sprintf("TWO LEADERS at %s: %s and %s", x.at.Format("15:04:05.000000"), describe(x.p, x.st), describe(y.p, y.st))
	c.mu.Lock()
	defer c.mu.Unlock()
	if x.at.Before(c.tolerateUntil) {
		c.overlaps = append(c.overlaps, msg)
		return
	}
	c.violations++
	if c.violations <= 5 {
		c.t.Error(msg)
	}
}

// tolerate records, instead of failing on, two leaders seen within the next
// d: for an outside action (an administrator deleting the leader's node)
// that both the old and the new leader learn of at the same moment.
func (c *checker) tolerate(d time.Duration) {
	c.mu.Lock()
	c.tolerateUntil = time.Now().Add(d)
	c.mu.Unlock()
}

func (c *checker) tolerated() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.overlaps...)
}

// lastLeading is when p was last seen leading (zero if never).
func (c *checker) lastLeading(p *participant) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastTrue[p]
}

// starts returns the leadership starts seen at or after since, in order,
// leaving out the participants in not.
func (c *checker) starts(since time.Time, not ...*participant) []transition {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []transition
outer:
	for _, e := range c.events {
		if !e.leader || e.at.Before(since) {
			continue
		}
		for _, n := range not {
			if e.p == n {
				continue outer
			}
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// firstStart waits until the checker has recorded a leadership start at or
// after since (by anyone but not) and returns the first. The caller has
// already seen one happen: the checker may simply not have sampled it yet.
func (c *checker) firstStart(t testing.TB, since time.Time, not ...*participant) transition {
	t.Helper()
	var first transition
	waitFor(t, time.Second, "the checker to record the new leadership", func() bool {
		s := c.starts(since, not...)
		if len(s) == 0 {
			return false
		}
		first = s[0]
		return true
	})
	return first
}

// allStarts returns every leadership start seen, in order.
func (c *checker) allStarts() []transition { return c.starts(time.Time{}) }

// lostSince says whether p was seen going from leader to not-leader at or
// after since.
func (c *checker) lostSince(p *participant, since time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	wasLeader := false
	for _, e := range c.events {
		if e.p != p {
			continue
		}
		if !e.at.Before(since) && wasLeader && !e.leader {
			return true
		}
		wasLeader = e.leader
	}
	return false
}

// states returns the sequence of connection states seen for p.
func (c *checker) states(p *participant) []election.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []election.State
	for _, e := range c.events {
		if e.p == p && (len(out) == 0 || out[len(out)-1] != e.state) {
			out = append(out, e.state)
		}
	}
	return out
}

func (c *checker) history(max int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := c.events
	if len(ev) > max {
		ev = ev[len(ev)-max:]
	}
	out := make([]string, len(ev))
	for i, e := range ev {
		out[i] = fmt.Sprintf("%s %s leader=%v state=%s token=%d node=%s reason=%q",
			e.at.Format("15:04:05.000"), e.p, e.leader, e.state, e.token, e.node, e.reason)
	}
	return out
}

// ---------------------------------------------------------------------------
// diagnostics

func fmtParticipant(p *election.Participant) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("{id=%s node=%s session=0x%x token=%d}", p.ID, p.Node, p.Session, p.FencingToken)
}

func describe(p *participant, st election.Status) string {
	return fmt.Sprintf("%s[id=%s leader=%v reason=%q state=%s session=0x%x joined=%v node=%s token=%d lease=%v leaderView=%s misconfigured=%q]",
		p, p.id, st.IsLeader, st.Reason, st.State, st.SessionID, st.Joined, st.Node, st.FencingToken,
		st.LeaseRemaining.Round(time.Millisecond), fmtParticipant(st.Leader), st.Misconfigured)
}

// dump logs every participant's view and the recent transitions.
func (h *harness) dump() {
	h.t.Logf("--- election %s (%s) at failure ---", h.path, h.mode)
	for _, p := range h.all() {
		h.t.Logf("%s stopped=%v runReturned=%v counters=%+v", describe(p, p.status()), p.stopped.Load(), p.runReturned(), p.el.Counters())
	}
	if o := h.chk.tolerated(); len(o) > 0 {
		h.t.Logf("tolerated overlaps: %v", o)
	}
	for _, line := range h.chk.history(60) {
		h.t.Log(line)
	}
}
