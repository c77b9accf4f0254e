package election_test

// The world of the interop tests: who takes part, and the sampling. electd participants
// are read by the integration tests' sampler (sampler_test.go) every 5 ms; every 20 ms
// each Curator participant's hasLeadership() is asked between two sweeps of the electd
// ones, into the same log. The check is invariant.CertainOverlaps: a Curator claim that
// falls wholly inside an electd participant's certain leadership (it led, with one
// token, in the sweeps before and after Curator's answer), or two electd participants
// one of which still led after the other claimed.

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
	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/zktest"
)

type interopWorld struct {
	t *testing.T
	s *sampler

	mu   sync.Mutex
	gos  []*interopGo
	curs []*curatortest.Participant

	stop     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once

	// What leaders() has read of the log so far.
	seenMu sync.Mutex
	readTo int
	seen   []interopSeen // claims, in the order recorded
}

type interopSeen struct {
	id string
	at time.Duration // on the log's clock
}

func newInteropWorld(t *testing.T) *interopWorld {
	w := &interopWorld{t: t, stop: make(chan struct{})}
	w.s = newSampler(w.goSources, interopGoSample)
	w.wg.Add(1)
	go w.sampleCurator()
	t.Cleanup(w.halt) // a no-op after finish; otherwise after the participants' cleanups
	return w
}

func (w *interopWorld) startGo(ens *zktest.Ensemble, path string, mode election.Mode, id string, term time.Duration) *interopGo {
	w.t.Helper()
	g := interopStartGo(w.t, ens, path, mode, id, term)
	w.mu.Lock()
	w.gos = append(w.gos, g)
	w.mu.Unlock()
	return g
}

// interopStartGo connects a session and runs an electd Elector on it until the test ends.
func interopStartGo(t *testing.T, ens *zktest.Ensemble, path string, mode election.Mode, id string, term time.Duration) *interopGo {
	t.Helper()
	sess, err := zksession.Connect(zksession.Config{Servers: ens.Servers(), SessionTimeout: interopSession})
	if err != nil {
		t.Fatalf("%s: Connect: %v", id, err)
	}
	el, err := election.New(sess, election.Config{Path: path, Mode: mode, ID: id, Term: term})
	if err != nil {
		sess.Close()
		t.Fatalf("%s: New: %v", id, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &interopGo{id: id, sess: sess, el: el, cancel: cancel, runDone: make(chan struct{})}
	go func() {
		defer close(g.runDone)
		if err := el.Run(ctx); err != nil {
			t.Logf("%s: Run: %v", id, err)
		}
	}()
	t.Cleanup(func() { g.stop(t) })
	return g
}

func (w *interopWorld) startCurator(ens *zktest.Ensemble, path, mode, id string, term time.Duration) *curatortest.Participant {
	w.t.Helper()
	p := curatortest.Start(w.t, ens.ConnectString(), path, mode, id, term)
	w.addCurator(p)
	return p
}

func (w *interopWorld) addCurator(p *curatortest.Participant) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.curs = append(w.curs, p)
}

// removeCurator stops sampling p (before a command that blocks its JVM for a while).
func (w *interopWorld) removeCurator(p *curatortest.Participant) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.curs = slices.DeleteFunc(w.curs, func(q *curatortest.Participant) bool { return q == p })
}

func (w *interopWorld) removeGo(g *interopGo) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gos = slices.DeleteFunc(w.gos, func(q *interopGo) bool { return q == g })
}

func (w *interopWorld) members() ([]*interopGo, []*curatortest.Participant) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.gos), slices.Clone(w.curs)
}

func (w *interopWorld) goSources() []source {
	gos, _ := w.members()
	out := make([]source, len(gos))
	for i, g := range gos {
		out[i] = source{name: g.id, status: g.el.Status}
	}
	return out
}

// sampleCurator asks every Curator participant whether it leads, between two sweeps of
// the electd participants, every interopCurSample.
func (w *interopWorld) sampleCurator() {
	defer w.wg.Done()
	tick := time.NewTicker(interopCurSample)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		_, curs := w.members()
		if len(curs) == 0 {
			continue
		}
		w.s.sweep()
		for _, c := range curs {
			send := w.s.log.Now()
			l, err := c.Leading()
			w.s.log.Record(invariant.Sample{Who: c.ID, Answered: err == nil, Leader: err == nil && l, Send: send, Recv: w.s.log.Now(), State: "curator"})
		}
		w.s.sweep()
	}
}

func (w *interopWorld) halt() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.wg.Wait()
		w.s.halt()
	})
}

// checkClean fails the test if two participants were seen leading at once so far.
func (w *interopWorld) checkClean() {
	w.t.Helper()
	_, violations := w.s.overlaps()
	if len(violations) == 0 {
		return
	}
	var lines []string
	for _, o := range violations[:min(len(violations), 20)] {
		lines = append(lines, o.String())
	}
	w.t.Fatalf("two leaders at once:\n  %s", strings.Join(lines, "\n  "))
}

// finish stops the samplers and checks them, then closes the Curator participants closing.
func (w *interopWorld) finish(closing ...*curatortest.Participant) {
	w.t.Helper()
	w.halt()
	w.checkClean()
	for _, c := range closing {
		if err := c.Close(); err != nil {
			w.t.Error(err)
		}
	}
}

// leaders returns the leadership sequence seen since t0 (consecutive repeats merged) and how
// many samples saw each id leading. It reads only what the log gained since its last call.
func (w *interopWorld) leaders(t0 time.Time) (seq []string, count map[string]int) {
	w.seenMu.Lock()
	defer w.seenMu.Unlock()
	var fresh []invariant.Sample
	fresh, w.readTo = w.s.log.SamplesFrom(w.readTo)
	for _, x := range fresh {
		if x.Leader {
			w.seen = append(w.seen, interopSeen{x.Who, x.Recv})
		}
	}
	from := w.s.log.Offset(t0)
	count = map[string]int{}
	for _, s := range w.seen {
		if s.at < from {
			continue
		}
		count[s.id]++
		if len(seq) == 0 || seq[len(seq)-1] != s.id {
			seq = append(seq, s.id)
		}
	}
	return seq, count
}

// observeRotation watches for at least d (and at most max) that every id leads at least once
// since t0, and that leadership changes hands at least len(ids) times.
func (w *interopWorld) observeRotation(t0 time.Time, d, max time.Duration, ids ...string) {
	t := w.t
	t.Helper()
	for {
		seq, count := w.leaders(t0)
		all := true
		for _, id := range ids {
			all = all && count[id] > 0
		}
		el := time.Since(t0)
		if all && len(seq) > len(ids) && el >= d {
			t.Logf("rotation among %v over %v: %s", ids, el.Round(time.Millisecond), strings.Join(seq, " "))
			for _, id := range seq {
				if !slices.Contains(ids, id) {
					t.Errorf("%s led during the rotation among %v", id, ids)
				}
			}
			return
		}
		if el > max {
			t.Fatalf("after %v, leadership went %v (samples per id %v); want each of %v to lead (and %d handoffs)",
				el.Round(time.Millisecond), seq, count, ids, len(ids))
		}
		time.Sleep(interopPoll)
	}
}

// agree waits until every participant (electd: Status and Participants; Curator: getLeader and
// getParticipants) names leader and the queue ids in this order, and exactly that one leads.
func (w *interopWorld) agree(when, leader string, queue ...string) {
	t := w.t
	t.Helper()
	gos, curs := w.members()
	ctx := interopCtx(t, interopAgree+5*time.Second)
	start := time.Now()
	interopWait(t, interopAgree, when+": everyone agrees that "+leader+" leads the queue "+strings.Join(queue, ","), func() error {
		var problems []string
		leaders := 0
		for _, c := range curs {
			s, err := c.Status()
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if s.IsLeader {
				leaders++
			}
			if s.Leader != leader || s.IsLeader != (c.ID == leader) || !slices.Equal(s.Participants, queue) {
				problems = append(problems, fmt.Sprintf("Curator %s: %s", c.ID, s))
			}
		}
		for _, g := range gos {
			st := g.el.Status()
			if st.IsLeader {
				leaders++
			}
			ps, err := g.el.Participants(ctx)
			if err != nil {
				problems = append(problems, fmt.Sprintf("electd %s: Participants: %v", g.id, err))
				continue
			}
			lid := "-"
			if st.Leader != nil {
				lid = st.Leader.ID + "@" + st.Leader.Node
			}
			if st.Leader == nil || st.Leader.ID != leader || st.IsLeader != (g.id == leader) ||
				!slices.Equal(interopIDs(ps), queue) || len(ps) == 0 || !ps[0].IsLeader {
				problems = append(problems, fmt.Sprintf("electd %s: IsLeader=%v Reason=%q Node=%s Leader=%s Misconfigured=%q Participants=%s",
					g.id, st.IsLeader, st.Reason, st.Node, lid, st.Misconfigured, interopFmtPs(ps)))
			}
		}
		if leaders != 1 {
			problems = append(problems, fmt.Sprintf("%d participants say they lead", leaders))
		}
		if len(problems) > 0 {
			return fmt.Errorf("%s", strings.Join(problems, "\n  "))
		}
		return nil
	})
	t.Logf("%s: all %d participants agree on leader %s and queue %v (after %v)", when, len(gos)+len(curs), leader, queue,
		time.Since(start).Round(time.Millisecond))
	w.checkClean()
}

// noNodeOf checks, through g's reading of the queue, that no node carries id.
func (w *interopWorld) noNodeOf(g *interopGo, id string) {
	w.t.Helper()
	ps, err := g.el.Participants(interopCtx(w.t, 5*time.Second))
	if err != nil {
		w.t.Fatal(err)
	}
	for _, p := range ps {
		if p.ID == id {
			w.t.Errorf("a node of %s is still there: %s", id, interopFmtPs(ps))
		}
	}
}
