package election_test

// Interop with real Apache Curator 5.4 clients (each in its own JVM, see tests/harness/curatortest)
// on one standalone ZooKeeper: Curator's LeaderLatch and LeaderSelector and electd's latch and
// selector on the same path see each other as participants, agree on one leader and on the
// queue, and never lead at the same time; a path mixing the two recipes is refused by electd.
//
// Every subtest samples who leads, electd and Curator participants alike, and fails when two
// of them certainly led at once (interop_world_test.go).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/tests/harness/curatortest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

const (
	interopTick      = 500 * time.Millisecond
	interopSession   = 4 * time.Second
	interopAgree     = 10 * time.Second // deadline for everyone to agree after a change (a JVM joins in ~1 s)
	interopPoll      = 10 * time.Millisecond
	interopGoSample  = 5 * time.Millisecond
	interopCurSample = 20 * time.Millisecond
	interopTerm      = time.Second // selector terms on both sides
)

// TestInteropCurator runs electd next to real Curator 5.4 clients. A missing java, javac or
// jar fails it (naming the apt package), it is never skipped.
func TestInteropCurator(t *testing.T) {
	ens := zktest.Start(t, zktest.Options{Servers: 1, TickTime: interopTick})
	// Compile first so that the first participant's start time is the JVM's alone.
	curatortest.Compile(t)

	t.Run("latch-curator-first", func(t *testing.T) { interopLatchCuratorFirst(t, ens) })
	t.Run("latch-electd-first", func(t *testing.T) { interopLatchElectdFirst(t, ens) })
	t.Run("selector-rotation", func(t *testing.T) { interopSelectorRotation(t, ens) })
	t.Run("mixed-modes", func(t *testing.T) {
		t.Run("curator-latch-then-electd-selector", func(t *testing.T) {
			interopMixed(t, ens, "/interop/mixed/curlatch-goselector", true, curatortest.Latch, election.ModeSelector)
		})
		t.Run("curator-selector-then-electd-latch", func(t *testing.T) {
			interopMixed(t, ens, "/interop/mixed/curselector-golatch", true, curatortest.Selector, election.ModeLatch)
		})
		t.Run("electd-selector-then-curator-latch", func(t *testing.T) {
			interopMixed(t, ens, "/interop/mixed/goselector-curlatch", false, curatortest.Latch, election.ModeSelector)
		})
		t.Run("electd-latch-then-curator-selector", func(t *testing.T) {
			interopMixed(t, ens, "/interop/mixed/golatch-curselector", false, curatortest.Selector, election.ModeLatch)
		})
	})
}

// interopLatchCuratorFirst: a Curator LeaderLatch joins first, then two electd latches; they
// agree; the Curator one leads; it closes and electd takes over with no Curator node left; a
// new Curator latch joins behind and does not lead; electd resigns and releases, Curator
// releases: the queue order decides every time.
func interopLatchCuratorFirst(t *testing.T, ens *zktest.Ensemble) {
	const path = "/interop/latch/curator-first"
	w := newInteropWorld(t)

	cur1 := w.startCurator(ens, path, curatortest.Latch, "cur-1", 0)
	t.Logf("Curator JVM start to READY (joined): %v", cur1.StartupTime())
	go1 := w.startGo(ens, path, election.ModeLatch, "go-1", 0)
	go1.waitJoined(t)
	go2 := w.startGo(ens, path, election.ModeLatch, "go-2", 0)
	go2.waitJoined(t)

	w.agree("Curator joined first", "cur-1", "cur-1", "go-1", "go-2")
	w.checkClean()

	// The Curator leader closes: the next in the queue (go-1) leads, and Curator's node is gone.
	start := time.Now()
	w.removeCurator(cur1)
	closeDone := make(chan error, 1)
	go func() { closeDone <- cur1.Close() }()
	led := interopWaitLeads(t, go1, interopAgree)
	t.Logf("handoff Curator -> electd on close: go-1 leads %v after the close command was sent", led.Sub(start))
	if err := <-closeDone; err != nil {
		t.Fatal(err)
	}
	w.agree("after the Curator leader closed", "go-1", "go-1", "go-2")
	w.noNodeOf(go1, "cur-1")
	if ev := cur1.Events(); len(ev) != 2 || !ev[0].Leader || ev[1].Leader {
		t.Errorf("cur-1 events %v, want [leader notleader]", ev)
	}

	// A new Curator latch joins behind the electd ones: it must not lead.
	cur2 := w.startCurator(ens, path, curatortest.Latch, "cur-2", 0)
	w.agree("a new Curator latch joined behind", "go-1", "go-1", "go-2", "cur-2")
	interopHold(t, time.Second, "cur-2 does not lead behind go-1 and go-2", func() error {
		if l, err := cur2.Leading(); err != nil || l {
			return fmt.Errorf("cur-2 Leading() = %v, %v", l, err)
		}
		if st := go1.el.Status(); !st.IsLeader {
			return fmt.Errorf("go-1 stopped leading: %s", st.Reason)
		}
		return nil
	})
	if ev := cur2.Events(); len(ev) != 0 {
		t.Errorf("cur-2 reported leadership events %v while behind go-1 and go-2", ev)
	}

	// The electd leader resigns: go-2 is next in the queue.
	ctx := interopCtx(t, 10*time.Second)
	w.removeGo(go1)
	if err := go1.el.Resign(ctx); err != nil {
		t.Fatalf("go-1 Resign: %v", err)
	}
	go1.stop(t)
	w.agree("after go-1 resigned", "go-2", "go-2", "cur-2")

	// The electd leader releases (re-queues at the back): Curator is next.
	if err := go2.el.Release(ctx); err != nil {
		t.Fatalf("go-2 Release: %v", err)
	}
	if d, err := interopWaitCuratorLeads(cur2, interopAgree); err != nil {
		t.Fatalf("after go-2 released: %v", err)
	} else {
		t.Logf("handoff electd -> Curator on release: cur-2 leads %v after Release was called", d)
	}
	w.agree("after go-2 released", "cur-2", "cur-2", "go-2")

	// Curator releases (closes its latch, starts a new one at the back): go-2 leads again.
	start = time.Now()
	w.removeCurator(cur2) // the release blocks the JVM's command loop: sample electd only meanwhile
	relDone := make(chan error, 1)
	go func() { relDone <- cur2.Release() }()
	led = interopWaitLeads(t, go2, interopAgree)
	t.Logf("handoff Curator -> electd on release: go-2 leads %v after the release command was sent", led.Sub(start))
	if err := <-relDone; err != nil {
		t.Fatal(err)
	}
	w.addCurator(cur2)
	w.agree("after cur-2 released", "go-2", "go-2", "cur-2")

	w.finish(cur2)
}

// interopLatchElectdFirst: electd leads, a Curator latch joins behind and names it; electd stops
// (Resign and close the session) and Curator leads.
func interopLatchElectdFirst(t *testing.T, ens *zktest.Ensemble) {
	const path = "/interop/latch/electd-first"
	w := newInteropWorld(t)
	go1 := w.startGo(ens, path, election.ModeLatch, "go-1", 0)
	interopWaitLeads(t, go1, interopAgree)
	cur := w.startCurator(ens, path, curatortest.Latch, "cur-1", 0)
	w.agree("electd first, Curator second", "go-1", "go-1", "cur-1")

	w.removeGo(go1)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := go1.el.Resign(interopCtx(t, 10*time.Second)); err != nil {
			t.Errorf("go-1 Resign: %v", err)
		}
		go1.stop(t)
	}()
	d, err := interopWaitCuratorLeads(cur, interopAgree)
	<-stopped
	if err != nil {
		t.Fatalf("after electd stopped: %v", err)
	}
	t.Logf("handoff electd -> Curator on stop (Resign + session close): cur-1 leads %v after Resign was called (the wait polls Curator every ~1 ms)", d)
	if _, err := cur.WaitStatus(interopAgree, func(s curatortest.Status) bool {
		return s.IsLeader && s.Leader == "cur-1" && slices.Equal(s.Participants, []string{"cur-1"})
	}); err != nil {
		t.Fatalf("after electd stopped: %v", err)
	}
	w.finish(cur)
}

// interopSelectorRotation: a Curator LeaderSelector (autoRequeue) and two electd selectors,
// all with 1 s terms: leadership rotates among all three; after an electd one stops, Curator
// and the other rotate; after a third electd joins and Curator stops, the electd ones rotate.
func interopSelectorRotation(t *testing.T, ens *zktest.Ensemble) {
	const path = "/interop/selector/rotation"
	w := newInteropWorld(t)
	cur := w.startCurator(ens, path, curatortest.Selector, "cur-1", interopTerm)
	go1 := w.startGo(ens, path, election.ModeSelector, "go-1", interopTerm)
	go1.waitJoined(t)
	go2 := w.startGo(ens, path, election.ModeSelector, "go-2", interopTerm)
	go2.waitJoined(t)

	phase := time.Now()
	w.observeRotation(phase, 6*time.Second, 12*time.Second, "cur-1", "go-1", "go-2")
	w.checkClean()

	// Stop an electd one: Curator and the other electd keep rotating.
	w.removeGo(go1)
	if err := go1.el.Resign(interopCtx(t, 10*time.Second)); err != nil {
		t.Fatalf("go-1 Resign: %v", err)
	}
	go1.stop(t)
	phase = time.Now()
	w.observeRotation(phase, 4*time.Second, 10*time.Second, "cur-1", "go-2")
	w.checkClean()

	// A third electd joins, then Curator stops: the electd ones keep rotating.
	go3 := w.startGo(ens, path, election.ModeSelector, "go-3", interopTerm)
	go3.waitJoined(t)
	w.removeCurator(cur)
	if err := cur.Close(); err != nil {
		t.Fatal(err)
	}
	phase = time.Now()
	w.observeRotation(phase, 4*time.Second, 10*time.Second, "go-2", "go-3")
	// A selector re-queueing at its term's end is out of the queue for a
	// round-trip: the listing is checked until it catches both queued.
	var last string
	waitFor(t, 10*time.Second, "participants go-2 and go-3 only after Curator closed", func() bool {
		ps, err := go2.el.Participants(interopCtx(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ids := interopIDs(ps)
		last = interopFmtPs(ps)
		return len(ids) == 2 && slices.Contains(ids, "go-2") && slices.Contains(ids, "go-3")
	})
	t.Logf("after Curator closed: %s", last)
	w.finish()
}

// interopMixed: Curator in one recipe and electd in the other on one path. electd must say
// Misconfigured and not lead there, whether Curator came first (then electd must never lead) or
// second (then electd must stop leading once Curator's node is there).
//
// No sampler runs here: with Curator second, Curator leads at once (it sorts its own node
// first, not knowing the other recipe's tag) until electd notices, an overlap no electd can
// prevent; what is checked is that electd notices and steps down.
func interopMixed(t *testing.T, ens *zktest.Ensemble, path string, curatorFirst bool, curMode string, goMode election.Mode) {
	var cur *curatortest.Participant
	var g *interopGo
	if curatorFirst {
		cur = curatortest.Start(t, ens.ConnectString(), path, curMode, "cur-1", 0)
		if _, err := cur.WaitStatus(interopAgree, func(s curatortest.Status) bool { return s.IsLeader }); err != nil {
			t.Fatalf("the Curator %s alone does not lead: %v", curMode, err)
		}
		g = interopStartGo(t, ens, path, goMode, "go-1", 0)
		// From its start, electd must never lead here.
		stopNever := interopNeverLeads(t, g)
		interopWaitMisconfigured(t, g, cur)
		// Hold past electd's retry period (it looks again every 2 s).
		interopHold(t, 3*time.Second, "electd stays misconfigured and Curator keeps leading", func() error {
			st := g.el.Status()
			if st.Misconfigured == "" {
				return fmt.Errorf("go-1 Misconfigured empty (IsLeader=%v, Reason=%q, Node=%q)", st.IsLeader, st.Reason, st.Node)
			}
			if l, err := cur.Leading(); err != nil || !l {
				return fmt.Errorf("cur-1 Leading() = %v, %v", l, err)
			}
			return nil
		})
		stopNever()
	} else {
		g = interopStartGo(t, ens, path, goMode, "go-1", 0)
		interopWaitLeads(t, g, interopAgree)
		joined := time.Now()
		cur = curatortest.Start(t, ens.ConnectString(), path, curMode, "cur-1", 0)
		// Curator, sorting its own node first (it does not know the other recipe's tag),
		// leads: electd must notice and give up.
		interopWaitMisconfigured(t, g, cur)
		t.Logf("electd stepped down %v after the Curator JVM was started (it joined after %v)",
			time.Since(joined).Round(time.Millisecond), cur.StartupTime().Round(time.Millisecond))
		stopNever := interopNeverLeads(t, g)
		interopHold(t, 3*time.Second, "electd stays misconfigured", func() error {
			if st := g.el.Status(); st.Misconfigured == "" {
				return fmt.Errorf("go-1 Misconfigured empty (IsLeader=%v, Reason=%q, Node=%q)", st.IsLeader, st.Reason, st.Node)
			}
			return nil
		})
		stopNever()
	}
	t.Logf("electd reports: %s", g.el.Status().Misconfigured)
	if err := cur.Close(); err != nil {
		t.Error(err)
	}
}

// ---------------------------------------------------------------------------
// electd participants

type interopGo struct {
	id       string
	sess     *zksession.Session
	el       *election.Elector
	cancel   context.CancelFunc
	runDone  chan struct{}
	stopOnce sync.Once
}

func (g *interopGo) String() string { return g.id }

// waitJoined waits until the elector's own node exists, so the next participant queues behind it.
func (g *interopGo) waitJoined(t *testing.T) {
	t.Helper()
	interopWait(t, interopAgree, g.id+" joined", func() error {
		if st := g.el.Status(); !st.Joined || st.Node == "" {
			return fmt.Errorf("Joined=%v Node=%q Reason=%q Misconfigured=%q", st.Joined, st.Node, st.Reason, st.Misconfigured)
		}
		return nil
	})
}

// stop cancels Run (which leaves the election unless Resign already did), waits for it and
// closes the session.
func (g *interopGo) stop(t testing.TB) {
	g.stopOnce.Do(func() {
		g.cancel()
		select {
		case <-g.runDone:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: Run did not return within 10s", g)
		}
		g.sess.Close()
	})
}

// ---------------------------------------------------------------------------
// small helpers

func interopCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// interopWait polls cond until it returns nil, failing the test with its last error after d.
func interopWait(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	if err := wait.Until(context.Background(), d, interopPoll, cond); err != nil {
		t.Fatalf("timed out waiting until %s; last seen %v", what, err)
	}
}

// interopHold polls cond for d and fails the test the first time it returns an error.
func interopHold(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	start := time.Now()
	for {
		if err := cond(); err != nil {
			t.Fatalf("%s: stopped holding after %v: %v", what, time.Since(start).Round(time.Millisecond), err)
		}
		if time.Since(start) > d {
			return
		}
		time.Sleep(interopPoll)
	}
}

// interopWaitLeads polls g every millisecond until it leads and returns when it was seen.
func interopWaitLeads(t testing.TB, g *interopGo, d time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := g.el.Status()
		if st.IsLeader {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not lead after %v: Reason=%q Node=%q Misconfigured=%q", g, d, st.Reason, st.Node, st.Misconfigured)
		}
		time.Sleep(time.Millisecond)
	}
}

// interopWaitCuratorLeads polls p's hasLeadership() back to back until it is true and returns
// how long that took.
func interopWaitCuratorLeads(p *curatortest.Participant, d time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		l, err := p.Leading()
		if err != nil {
			return 0, err
		}
		if l {
			return time.Since(start), nil
		}
		if time.Since(start) > d {
			st, _ := p.Status()
			return 0, fmt.Errorf("%s does not lead after %v: %s", p, d, st)
		}
	}
}

// interopWaitMisconfigured waits until g says the path is misconfigured and does not lead.
func interopWaitMisconfigured(t testing.TB, g *interopGo, cur *curatortest.Participant) {
	t.Helper()
	interopWait(t, interopAgree, g.id+" reports the path misconfigured and does not lead", func() error {
		st := g.el.Status()
		if st.Misconfigured != "" && !st.IsLeader {
			return nil
		}
		ps, _ := g.el.Participants(context.Background())
		cs, _ := cur.Status()
		return fmt.Errorf("electd %s: IsLeader=%v Reason=%q Node=%q Misconfigured=%q; queue %s; Curator %s: %s",
			g.id, st.IsLeader, st.Reason, st.Node, st.Misconfigured, interopFmtPs(ps), cur.ID, cs)
	})
}

// interopNeverLeads watches g every millisecond until the returned function is called, which
// fails the test if g led meanwhile.
func interopNeverLeads(t testing.TB, g *interopGo) (stop func()) {
	quit := make(chan struct{})
	done := make(chan string, 1)
	go func() {
		for {
			select {
			case <-quit:
				done <- ""
				return
			default:
			}
			if st := g.el.Status(); st.IsLeader {
				done <- fmt.Sprintf("%s led on a misconfigured path at %s: Node=%q Reason=%q Misconfigured=%q",
					g, time.Now().Format("15:04:05.000"), st.Node, st.Reason, st.Misconfigured)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var once sync.Once
	stop = func() {
		t.Helper()
		once.Do(func() {
			close(quit)
			if msg := <-done; msg != "" {
				t.Error(msg)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func interopIDs(ps []election.Participant) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

func interopFmtPs(ps []election.Participant) string {
	var b strings.Builder
	b.WriteString("[")
	for i, p := range ps {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s@%s", p.ID, p.Node)
		if p.IsLeader {
			b.WriteString("(leader)")
		}
	}
	b.WriteString("]")
	return b.String()
}
