package election_test

// The harness of the integration tests: an election on one path, its participants, the
// waits on what they report, and the checker that samples them (sampler_test.go).

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/zktest"
)

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

	zkMu sync.Mutex
	zkc  *zk.Conn // the direct client, dialled on first use

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
	scfg := zksession.Config{Servers: servers, SessionTimeout: sessionTimeout, Recorder: p.rec}
	if os.Getenv("ELECTD_TEST_LOG") != "" {
		// Debugging aid: every participant's log on stderr.
		scfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("p", name)
	}
	if o.session != nil {
		o.session(&scfg)
	}
	sess, err := zksession.Connect(scfg)
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

// waitKnows waits until leader l has read a queue of n nodes. A leaving
// leader hands over to the newest participant it knows of
// (docs/design/handover.md, "Handoff"); a join whose watch event has not
// reached it yet is not among them.
func (h *harness) waitKnows(l *participant, n int) {
	h.t.Helper()
	waitFor(h.t, agreeWithin, fmt.Sprintf("%s to know a queue of %d", l, n), func() bool {
		st := l.status()
		return st.IsLeader && st.Participants == n
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
	var stat *zk.Stat
	if err := h.zkRead(func(c *zk.Conn) (err error) { _, stat, err = c.Get(h.path + "/" + st.Node); return err }); err != nil {
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

// startFirstLeads starts n joined participants, checks the first in the
// queue leads and every view agrees, and returns them and its token.
func (h *harness) startFirstLeads(n int) ([]*participant, int64) {
	h.t.Helper()
	ps := h.startJoined(n, opts{})
	l := h.waitOneLeader(liveWithin)
	if l != ps[0] {
		h.t.Fatalf("%s leads, want the first in the queue %s", l, ps[0])
	}
	return ps, h.waitAgreement(l)
}

// settleAfter checks the new leader nl holds a greater token than tok, then
// that the nodes settle; it logs the overlaps tolerated around what.
func (h *harness) settleAfter(nl *participant, tok int64, what string) {
	h.t.Helper()
	if tok2 := h.waitAgreement(nl); tok2 <= tok {
		h.t.Fatalf("token %d after %s, was %d", tok2, what, tok)
	}
	h.waitNodesConsistent(liveWithin, 300*time.Millisecond)
	if o := h.chk.tolerated(); len(o) > 0 {
		h.t.Logf("overlap around %s (tolerated): %v", what, o)
	}
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
// the leader checker: the sampler (sampler_test.go), asked about participants

type checker struct {
	t *testing.T
	h *harness
	s *sampler
}

func newChecker(t *testing.T, h *harness) *checker {
	sources := func() []source {
		var out []source
		for _, p := range h.all() {
			out = append(out, source{name: p.name, status: p.el.Status})
		}
		return out
	}
	return &checker{t: t, h: h, s: newSampler(sources, sampleEvery)}
}

// close stops sampling and fails the test for every two leaders at once.
func (c *checker) close() {
	c.s.halt()
	c.s.check(c.t)
}

// transition is a leadership's beginning.
type transition struct {
	at time.Time
	p  *participant
}

func (c *checker) transitions(st []start) []transition {
	out := make([]transition, len(st))
	for i, x := range st {
		out[i] = transition{at: x.at, p: c.h.byName(x.who)}
	}
	return out
}

// starts returns the leaderships that began at or after since, in order, leaving out
// the participants in not.
func (c *checker) starts(since time.Time, not ...*participant) []transition {
	return c.transitions(c.s.starts(since, names(not)...))
}

// allStarts returns every leadership seen, in order.
func (c *checker) allStarts() []transition { return c.starts(time.Time{}) }

// firstStart waits until a leadership began at or after since (by anyone but not) and
// returns the first.
func (c *checker) firstStart(t testing.TB, since time.Time, not ...*participant) transition {
	t.Helper()
	return c.transitions([]start{c.s.firstStart(t, since, names(not)...)})[0]
}

// lastLeading is when p was last seen leading (zero if never).
func (c *checker) lastLeading(p *participant) time.Time { return c.s.lastLeading(p.name) }

// lostSince says whether p was seen going from leader to not-leader at or after since.
func (c *checker) lostSince(p *participant, since time.Time) bool {
	return c.s.lostSince(p.name, since)
}

// states returns the sequence of connection states seen for p.
func (c *checker) states(p *participant) []zksession.State { return c.s.states(p.name) }

// history renders what every participant was seen doing over the last d.
func (c *checker) history(d time.Duration) string { return c.s.history(d) }

// tolerate records, instead of failing on, two leaders seen within the next d (see
// sampler.tolerate).
func (c *checker) tolerate(d time.Duration) { c.s.tolerate(d) }

// tolerated returns the overlaps seen in tolerated windows.
func (c *checker) tolerated() []invariant.SpanOverlap {
	tol, _ := c.s.overlaps()
	return tol
}

func names(ps []*participant) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.name
	}
	return out
}

// byName returns the participant called name, or nil.
func (h *harness) byName(name string) *participant {
	for _, p := range h.all() {
		if p.name == name {
			return p
		}
	}
	return nil
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
	h.t.Log(h.chk.history(3 * time.Second))
}
