package election_test

// Integration tests of the election engine against a real ZooKeeper: the
// three modes, selector fairness, herd-freedom, server lists, ACLs and the
// Curator scenarios that need no fault injection.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
)

var allModes = []election.Mode{election.ModeLatch, election.ModeSelector, election.ModeRace}

// TestZKModes: in each mode five participants elect exactly one leader that
// all of them name, with the czxid of its node as fencing token; Release and
// Resign hand leadership on, and the token grows at each change.
func TestZKModes(t *testing.T) {
	ens := startZK(t)
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, ens, "/modes/"+string(mode), mode)
			h.startN(5, opts{})
			h.waitAllJoined(liveWithin)
			l1 := h.waitOneLeader(liveWithin)
			tok1 := h.waitAgreement(l1)

			if err := l1.el.Release(ctxFor(t, 5*time.Second)); err != nil {
				t.Fatalf("%s: Release: %v", l1, err)
			}
			l2 := h.waitLeaderOtherThan(liveWithin, l1)
			tok2 := h.waitAgreement(l2)
			if tok2 <= tok1 {
				t.Fatalf("after Release: fencing token %d (%s), was %d (%s): must grow", tok2, l2, tok1, l1)
			}
			if mode != election.ModeRace {
				waitFor(t, liveWithin, l1.name+" back in the queue after Release", func() bool {
					st := l1.status()
					return st.Joined && !st.IsLeader
				})
			}

			l2.resignClose(t)
			l3 := h.waitLeaderOtherThan(liveWithin, l2)
			tok3 := h.waitAgreement(l3)
			if tok3 <= tok2 {
				t.Fatalf("after Resign: fencing token %d (%s), was %d (%s): must grow", tok3, l3, tok2, l2)
			}
			if mode != election.ModeRace {
				h.waitNodesConsistent(liveWithin, 100*time.Millisecond)
			}
		})
	}
}

// TestZKSelectorFairness: with a term, leadership rotates through the queue
// in order, each participant leading exactly once per round; a lone
// selector keeps leadership across terms without writing.
func TestZKSelectorFairness(t *testing.T) {
	ens := startZK(t)
	const term = 300 * time.Millisecond
	withTerm := opts{config: func(c *election.Config) { c.Term = term }}

	t.Run("rotation", func(t *testing.T) {
		h := newHarness(t, ens, "/fair/rotation", election.ModeSelector)
		const n, rounds = 5, 3
		h.startN(n, withTerm)
		h.waitAllJoined(liveWithin)

		// The queue as of one instant: every participant has a node in it.
		// From then on leadership must follow it cyclically, starting at its head.
		var since time.Time
		var order []string
		waitFor(t, 10*time.Second, "a queue snapshot holding all participants", func() bool {
			since = time.Now()
			q, err := readQueue(h.zk(), h.path, h.mode)
			if err != nil || len(q) != n {
				return false
			}
			order = order[:0]
			ids := map[string]bool{}
			for _, z := range q {
				ids[z.id] = true
				order = append(order, z.id)
			}
			return len(ids) == n
		})
		t.Logf("queue order at %s: %v", since.Format("15:04:05.000"), order)

		var seq []string
		waitFor(t, time.Duration(n*rounds+4)*term+10*time.Second, "15 leaderships after the snapshot", func() bool {
			all := h.chk.allStarts()
			b := len(all)
			for i, s := range all {
				if !s.at.Before(since) {
					b = i
					break
				}
			}
			// The leader in office at the snapshot counts if it is the head.
			if b > 0 && all[b-1].p.id == order[0] {
				b--
			}
			seq = seq[:0]
			for _, s := range all[b:] {
				seq = append(seq, s.p.id)
			}
			return len(seq) >= n*rounds
		})
		seq = seq[:n*rounds]
		for i, id := range seq {
			if id != order[i%n] {
				t.Fatalf("leadership sequence %v is not the queue order %v repeated %d times (position %d: %s, want %s)",
					seq, order, rounds, i, id, order[i%n])
			}
		}
		t.Logf("leadership sequence %v", seq)
	})

	t.Run("lone", func(t *testing.T) {
		h := newHarness(t, ens, "/fair/lone", election.ModeSelector)
		p := h.start(withTerm)
		waitFor(t, 10*time.Second, "the lone selector to lead", p.leads)
		since := time.Now()
		w := p.el.Counters().Writes
		holdFor(t, 6*term, "lone selector leading with no writes", func() bool {
			return p.leads() && p.el.Counters().Writes == w
		})
		if h.chk.lostSince(p, since) {
			t.Fatalf("the lone selector lost leadership at a term's end (flap): %v", h.chk.history(3*time.Second))
		}
	})
}

// TestZKHerdFree: a leader change in a queue of 20 makes exactly one
// follower re-check its candidacy and no follower write, yet every
// follower names the new leader (how soon is logged).
func TestZKHerdFree(t *testing.T) {
	ens := startZK(t)
	for _, mode := range []election.Mode{election.ModeLatch, election.ModeSelector} {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, ens, "/herd/"+string(mode), mode)
			h.startN(20, opts{})
			h.waitAllJoined(liveWithin)
			l := h.waitOneLeader(liveWithin)
			h.waitAgreement(l)
			for _, op := range []string{"release", "resign"} {
				h.waitQuiet(300*time.Millisecond, 10*time.Second)
				before := h.counters()
				switch op {
				case "release":
					if err := l.el.Release(ctxFor(t, 5*time.Second)); err != nil {
						t.Fatalf("%s: Release: %v", l, err)
					}
				case "resign":
					l.resignClose(t)
				}
				nl := h.waitLeaderOtherThan(liveWithin, l)
				h.waitAgreement(nl)
				check := func() bool {
					var rechecked []string
					for p, c := range h.counters() {
						b, ok := before[p]
						if p == l || !ok {
							continue
						}
						if c.Writes != b.Writes {
							t.Logf("%s: follower %s sent %d writes (Writes %d -> %d)", op, p, c.Writes-b.Writes, b.Writes, c.Writes)
							return false
						}
						if c.Rechecks != b.Rechecks {
							rechecked = append(rechecked, p.name)
						}
					}
					if len(rechecked) != 1 || rechecked[0] != nl.name {
						t.Logf("%s: followers that re-checked: %v, want only the new leader %s", op, rechecked, nl)
						return false
					}
					return true
				}
				holdFor(t, 300*time.Millisecond, op+": herd-free counters", check)
				t.Logf("%s: %s -> %s; only %s re-checked", op, l, nl, nl)
				l = nl
			}
		})
	}
}

// TestZKUnresolvableServer: a server name that does not resolve next to one
// that does neither fails Connect nor keeps the participant from leading.
func TestZKUnresolvableServer(t *testing.T) {
	ens := startZK(t)
	h := newHarness(t, ens, "/dns", election.ModeLatch)
	servers := append([]string{"no-such-host.invalid:2181"}, h.servers()...)
	p := h.start(opts{servers: servers})
	waitFor(t, 20*time.Second, p.name+" to lead", p.leads)
	h.waitAgreement(p)
}

// TestZKACL: with Auth, nodes are created so that a client without the
// credentials cannot delete or change them, and a participant without them
// is told so instead of silently leading.
func TestZKACL(t *testing.T) {
	ens := startZK(t)
	h := newHarness(t, ens, "/acl/election", election.ModeLatch)
	withAuth := opts{session: func(c *zksession.Config) { c.Auth = "user:pass" }}
	h.startJoined(2, withAuth)
	l := h.waitOneLeader(liveWithin)
	h.waitAgreement(l)

	c := h.zk()
	q := h.queue()
	if len(q) != 2 {
		t.Fatalf("want 2 nodes, have %v", q)
	}
	for _, n := range q {
		if err := c.Delete(h.path+"/"+n.name, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("unauthenticated delete of %s: %v, want %v", n.name, err, zk.ErrNoAuth)
		}
		if _, err := c.Set(h.path+"/"+n.name, []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("unauthenticated set of %s: %v, want %v", n.name, err, zk.ErrNoAuth)
		}
	}
	if err := c.Delete(h.path, -1); err == nil {
		t.Errorf("unauthenticated delete of %s succeeded", h.path)
	}

	n := h.start(opts{})
	waitFor(t, 10*time.Second, n.name+" (no auth) to surface an auth error", func() bool {
		if n.runReturned() {
			return n.runErr != nil
		}
		return strings.Contains(strings.ToLower(n.status().Reason), "auth")
	})
	if n.runReturned() {
		t.Logf("%s: Run returned %v", n, n.runErr)
	} else {
		t.Logf("%s: Reason %q", n, n.status().Reason)
	}
	if h.chk.lastLeading(n) != (time.Time{}) {
		t.Fatalf("%s led without auth", n)
	}
	for _, z := range h.queue() {
		if z.owner == n.sess.ID() {
			t.Fatalf("%s owns node %v without auth", n, z)
		}
	}
	if !l.leads() {
		t.Fatalf("%s no longer leads", l)
	}
}

// TestZKCurator ports the Curator scenarios that need no fault injection.
func TestZKCurator(t *testing.T) {
	ens := startZK(t)

	// Await/close cycles: participants await leadership, resign and rejoin;
	// never two leaders, every participant leads every cycle.
	t.Run("await-close-cycles", func(t *testing.T) {
		h := newHarness(t, ens, "/curator/await", election.ModeLatch)
		const n, cycles = 5, 3
		var mu sync.Mutex
		led := map[int]int{}
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range cycles {
					p, err := h.tryStart(opts{})
					if err != nil {
						t.Error(err)
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					lost, err := p.el.Await(ctx)
					cancel()
					if err != nil {
						t.Errorf("%s: Await: %v", p, err)
						return
					}
					if st := p.status(); !st.IsLeader {
						t.Errorf("%s: Await returned but IsLeader is false (%s)", p, st.Reason)
					}
					mu.Lock()
					led[i]++
					mu.Unlock()
					p.resignClose(t)
					select {
					case <-lost:
					case <-time.After(5 * time.Second):
						t.Errorf("%s: the channel from Await was not closed after Resign", p)
					}
				}
			}()
		}
		wg.Wait()
		for i := range n {
			if led[i] != cycles {
				t.Errorf("goroutine %d led %d times, want %d", i, led[i], cycles)
			}
		}
	})

	// Closing a follower in the middle of the queue does not promote its
	// successor, which re-checks once and writes nothing.
	t.Run("close-middle-follower", func(t *testing.T) {
		h := newHarness(t, ens, "/curator/middle", election.ModeLatch)
		ps, _ := h.startFirstLeads(4)
		h.waitQuiet(200*time.Millisecond, 10*time.Second)
		succ := ps[2]
		before := succ.el.Counters()
		ps[1].resignClose(t)
		waitFor(t, liveWithin, succ.name+" to re-check after its predecessor left", func() bool {
			return succ.el.Counters().Rechecks > before.Rechecks
		})
		holdFor(t, 500*time.Millisecond, ps[0].name+" still leading, "+succ.name+" following", func() bool {
			st := succ.status()
			return ps[0].leads() && !st.IsLeader && st.Leader != nil && st.Leader.ID == ps[0].id
		})
		if w := succ.el.Counters().Writes; w != before.Writes {
			t.Fatalf("%s wrote %d times after its predecessor left (delete/recreate?)", succ, w-before.Writes)
		}
		h.waitNodesConsistent(liveWithin, 100*time.Millisecond)
	})

	t.Run("relative-path", func(t *testing.T) {
		h := newHarness(t, ens, "/curator/relative", election.ModeLatch)
		sess, err := zksession.Connect(zksession.Config{Servers: h.servers(), SessionTimeout: sessionTimeout})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		for _, path := range []string{"election", "curator/relative", "./x", ""} {
			cfg := election.Config{Path: path, ID: "x"}
			if err := cfg.Validate(); err == nil {
				t.Errorf("Validate accepted path %q", path)
			}
			if _, err := election.New(sess, cfg); err == nil {
				t.Errorf("New accepted path %q", path)
			}
		}
	})

	t.Run("participants-missing-path", func(t *testing.T) {
		for _, mode := range allModes {
			h := newHarness(t, ens, "/curator/missing/"+string(mode), mode)
			p := h.start(opts{noRun: true})
			waitFor(t, 10*time.Second, "session connected", func() bool { return p.sess.State() == zksession.StateConnected })
			got, err := p.el.Participants(ctxFor(t, 5*time.Second))
			if err != nil || len(got) != 0 {
				t.Errorf("%s: Participants on a missing path = %v, %v; want empty, nil", mode, got, err)
			}
		}
	})

	// A node of the other mode in a latch path: refuse to lead and say so;
	// once it is gone, lead.
	t.Run("foreign-mode-node", func(t *testing.T) {
		h := newHarness(t, ens, "/curator/foreign", election.ModeLatch)
		c := h.zk()
		ensurePath(t, c, h.path)
		foreign, err := c.Create(h.path+"/_c_"+newUUID()+"-lock-", []byte("curator-selector"),
			zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		p := h.start(opts{})
		waitFor(t, 10*time.Second, p.name+" to report Misconfigured", func() bool { return p.status().Misconfigured != "" })
		t.Logf("Misconfigured: %q, Reason: %q", p.status().Misconfigured, p.status().Reason)
		holdFor(t, 500*time.Millisecond, p.name+" not leading on a misconfigured path", func() bool { return !p.leads() })
		if err := c.Delete(foreign, -1); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, p.name+" to lead once the foreign node is gone", p.leads)
		if m := p.status().Misconfigured; m != "" {
			t.Fatalf("still Misconfigured %q", m)
		}
	})

	// An administrator deletes the leader's node: that participant rejoins at
	// the back and the next one leads.
	t.Run("leader-node-deleted", func(t *testing.T) {
		h := newHarness(t, ens, "/curator/admin-delete", election.ModeLatch)
		ps, tok := h.startFirstLeads(3)
		l := ps[0]
		old := l.status().Node
		// Both the old leader and its successor learn of the delete from the
		// same notification: an overlap of a few ms is outside the contract.
		h.chk.tolerate(time.Second)
		if err := h.zk().Delete(h.path+"/"+old, -1); err != nil {
			t.Fatal(err)
		}
		nl := h.waitLeaderOtherThan(liveWithin, l)
		if nl != ps[1] {
			t.Fatalf("%s leads after the delete, want %s", nl, ps[1])
		}
		waitFor(t, liveWithin, l.name+" to rejoin with a new node", func() bool {
			st := l.status()
			return st.Joined && st.Node != "" && st.Node != old && !st.IsLeader
		})
		h.settleAfter(nl, tok, "the admin delete")
	})

	// The election path vanishes with everything under it (CURATOR-724):
	// the participants recreate it and elect one leader.
	t.Run("path-deleted", func(t *testing.T) {
		h := newHarness(t, ens, "/curator/path-deleted/election", election.ModeLatch)
		h.startJoined(3, opts{})
		l := h.waitOneLeader(liveWithin)
		tok := h.waitAgreement(l)
		oldNode := l.status().Node
		c := h.zk()
		h.chk.tolerate(time.Second)
		waitFor(t, liveWithin, "deleting the path and its children in one multi", func() bool {
			kids, _, err := c.Children(h.path)
			if err != nil {
				return false
			}
			var ops []any
			for _, k := range kids {
				ops = append(ops, &zk.DeleteRequest{Path: h.path + "/" + k, Version: -1})
			}
			ops = append(ops, &zk.DeleteRequest{Path: h.path, Version: -1})
			_, err = c.Multi(ops...)
			return err == nil
		})
		var nl *participant
		waitFor(t, 10*time.Second, "one leader on a node of the recreated path", func() bool {
			ls := h.leaders()
			if len(ls) != 1 || ls[0].status().Node == oldNode {
				return false
			}
			nl = ls[0]
			return true
		})
		h.waitAllJoined(liveWithin)
		h.settleAfter(nl, tok, "the path delete")
	})

	// Selector: the leader's session is closed under it (no Resign): the
	// other participant leads at once, and Run reports the closed session.
	t.Run("selector-session-closed", func(t *testing.T) {
		h := newHarness(t, ens, "/curator/selector-closed", election.ModeSelector)
		ps, tok := h.startFirstLeads(2)
		l := ps[0]
		l.sess.Close()
		waitFor(t, liveWithin, l.name+"'s Run to return", l.runReturned)
		if !errors.Is(l.runErr, zksession.ErrSessionClosed) {
			t.Errorf("%s: Run returned %v, want %v", l, l.runErr, zksession.ErrSessionClosed)
		}
		l.stop(t)
		nl := h.waitLeaderOtherThan(liveWithin, l)
		if tok2 := h.waitAgreement(nl); tok2 <= tok {
			t.Fatalf("token %d, was %d", tok2, tok)
		}
		if h.chk.lastLeading(l).After(h.chk.firstStart(t, time.Time{}, l).at) {
			t.Fatalf("%s still led after %s started", l, nl)
		}
	})

	// Unlike Curator, electd refuses a second participant with a live
	// one's id (docs/design/election-and-lease.md, "Duplicate ids"): the newer one stays out
	// and says why, and joins once the older one has left.
	t.Run("duplicate-ids", func(t *testing.T) {
		h := newHarness(t, ens, "/curator/dup", election.ModeLatch)
		a := h.startJoined(1, opts{id: "dup"})[0]
		b := h.start(opts{id: "dup"})
		waitFor(t, liveWithin, b.name+" to refuse the duplicate id", func() bool {
			st := b.status()
			return st.Why == election.ReasonDuplicateID && !st.Joined
		})
		holdFor(t, 300*time.Millisecond, a.name+" alone leads, "+b.name+" stays out", func() bool {
			return a.leads() && !b.status().Joined
		})
		a.resignClose(t)
		waitFor(t, liveWithin, b.name+" to lead once "+a.name+" left", b.leads)
	})

	// Race followers own no election node, yet Participants lists them
	// (from their session's meta node) after the leader, in join order, and
	// drops one once it leaves.
	t.Run("participants-race", func(t *testing.T) {
		h := newHarness(t, ens, "/curator/race-ids", election.ModeRace)
		ps := h.startJoined(4, opts{})
		l := h.waitOneLeader(liveWithin)
		h.waitAgreement(l)
		ids := func(got []election.Participant) []string {
			var out []string
			for _, e := range got {
				out = append(out, e.ID)
			}
			return out
		}
		var want []string
		for _, p := range ps {
			if p != l {
				want = append(want, p.id)
			}
		}
		got, err := ps[0].el.Participants(ctxFor(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 4 || got[0].ID != l.id || !got[0].IsLeader || got[0].Node == "" || got[0].FencingToken == 0 {
			t.Fatalf("Participants = %+v; want leader %s first with its node and token, then 3 followers", got, l)
		}
		if g := ids(got[1:]); !slices.Equal(g, want) {
			t.Fatalf("race followers %v, want %v (join order)", g, want)
		}
		for _, e := range got[1:] {
			if e.IsLeader || e.Node != "" || e.FencingToken != 0 || e.Session == 0 {
				t.Fatalf("race follower %+v: want no node, no token, its session", e)
			}
		}
		gone := ps[len(ps)-1]
		if gone == l {
			gone = ps[len(ps)-2]
		}
		gone.resignClose(t)
		waitFor(t, 10*time.Second, gone.name+" off the race participants", func() bool {
			got, err := l.el.Participants(ctxFor(t, 5*time.Second))
			return err == nil && len(got) == 3 && !slices.Contains(ids(got), gone.id)
		})
	})

	// Ids and leader as Participants reports them (ten participants, one
	// list, one leader).
	t.Run("participants-list", func(t *testing.T) {
		h := newHarness(t, ens, "/curator/ids", election.ModeSelector)
		ps := h.startJoined(10, opts{})
		l := h.waitOneLeader(liveWithin)
		h.waitAgreement(l)
		var first []election.Participant
		for _, p := range ps {
			got, err := p.el.Participants(ctxFor(t, 5*time.Second))
			if err != nil {
				t.Fatalf("%s: Participants: %v", p, err)
			}
			if len(got) != len(ps) {
				t.Fatalf("%s: Participants has %d entries, want %d", p, len(got), len(ps))
			}
			leaders := 0
			for i, e := range got {
				if e.ID != ps[i].id {
					t.Fatalf("%s: Participants[%d] = %s, want %s (queue order)", p, i, e.ID, ps[i].id)
				}
				if e.IsLeader {
					leaders++
					if e.ID != l.id {
						t.Fatalf("%s: Participants marks %s leader, %s leads", p, e.ID, l)
					}
				}
			}
			if leaders != 1 {
				t.Fatalf("%s: Participants marks %d leaders", p, leaders)
			}
			if first == nil {
				first = got
			} else {
				for i := range got {
					if got[i].Node != first[i].Node {
						t.Fatalf("%s and %s disagree at %d: %s vs %s", p, ps[0], i, got[i].Node, first[i].Node)
					}
				}
			}
		}
	})
}

// TestZKLeaderSeesEveryJoin: participants that join while the leader claims
// (between its read of the queue and its children watch) still reach its
// count, which is what electd_participants reports on the leader. Repeated,
// as the window is narrow.
func TestZKLeaderSeesEveryJoin(t *testing.T) {
	ens := startZK(t)
	for i := 0; i < 8; i++ {
		h := newHarness(t, ens, fmt.Sprintf("/members/round%d", i), election.ModeLatch)
		h.startN(3, opts{})
		h.waitAllJoined(liveWithin)
		l := h.waitOneLeader(liveWithin)
		waitFor(t, liveWithin, l.name+" to count 3 participants", func() bool { return l.status().Participants == 3 })
	}
}
