package election_test

// Integration tests with faults: a leader cut off until its session expires,
// a create whose reply is lost, a Resign while a create is in flight, and
// the server stopped and restarted under the election.

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/tests/harness/zktest"
)

func waitReady(t testing.TB, ens *zktest.Ensemble) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ens.WaitReady(ctx); err != nil {
		t.Fatalf("zookeeper not ready: %v", err)
	}
}

// startZKRunningStale starts a server that runs a create whose connection the
// proxy cut right after it (releaseLosingReply): by default ZooKeeper may drop it
// unrun as stale, and on a loaded machine it often does, so "applied, reply
// lost" would not be what the test made.
func startZKRunningStale(t *testing.T) *zktest.Ensemble {
	t.Helper()
	return zktest.Start(t, zktest.Options{Servers: 1, TickTime: tickTime, RunStaleRequests: true})
}

// longSession keeps a session alive through the outages below.
func longSession(c *zksession.Config) { c.SessionTimeout = 4 * time.Second }

// startChainedLeader sets up an election on path, starts a participant
// behind two proxies (opts.chain), waits for it to lead, then starts n
// joined followers.
func startChainedLeader(t *testing.T, ens *zktest.Ensemble, path string, mode election.Mode, n int, session func(*zksession.Config)) (*harness, *participant) {
	t.Helper()
	h := newHarness(t, ens, path, mode)
	p := h.start(opts{chain: true, session: session})
	waitFor(t, 10*time.Second, p.name+" to lead", p.leads)
	h.startJoined(n, opts{})
	return h, p
}

// TestZKLeaderSessionExpiry: the leader is cut off (blackholed) until the
// ensemble expires its session. It must stop reporting leadership before
// anybody else starts; another participant takes over; once healed, the
// old leader rejoins as a follower with a new session and stays one.
func TestZKLeaderSessionExpiry(t *testing.T) {
	ens := startZK(t)
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, ens, "/expiry/"+string(mode), mode)
			old := h.start(opts{proxy: true})
			waitFor(t, 10*time.Second, old.name+" to lead", old.leads)
			h.startN(2, opts{})
			h.waitAllJoined(liveWithin)
			h.waitAgreement(old)
			oldSID := old.status().SessionID

			cut := time.Now()
			old.proxy.Blackhole()
			waitFor(t, sessionTimeout, old.name+" to stop leading once its lease lapses", func() bool { return !old.leads() })
			stopped := time.Since(cut)
			nl := h.waitLeaderOtherThan(liveWithin, old)
			took := time.Since(cut)

			first := h.chk.firstStart(t, cut, old)
			last := h.chk.lastLeading(old)
			if !last.Before(first.at) {
				t.Fatalf("%s was still leading %v after the cut, %s started leading at %v: the old leader must stop first",
					old, last.Sub(cut), first.p, first.at.Sub(cut))
			}
			t.Logf("cut at 0: %s last led at %v (not leading seen by %v); %s leads from %v (seen by %v); gap %v",
				old, last.Sub(cut).Round(time.Millisecond), stopped.Round(time.Millisecond),
				first.p, first.at.Sub(cut).Round(time.Millisecond), took.Round(time.Millisecond), first.at.Sub(last).Round(time.Millisecond))

			healed := time.Now()
			old.proxy.Heal()
			waitFor(t, 15*time.Second, old.name+" to rejoin as a follower with a new session", func() bool {
				st := old.status()
				return st.State == zksession.StateConnected && st.SessionID != 0 && st.SessionID != oldSID && st.Joined && !st.IsLeader
			})
			holdFor(t, time.Second, nl.name+" keeps leading and "+old.name+" does not regain it", func() bool {
				return nl.leads() && !old.leads()
			})
			if h.chk.lastLeading(old).After(healed) {
				t.Fatalf("%s led again after the heal", old)
			}
			if mode != election.ModeRace {
				h.waitNodesConsistent(liveWithin, 200*time.Millisecond)
			}
			h.waitAgreement(nl)
		})
	}
}

// eachQueueMode runs f as a subtest, named mode+suffix, for each mode that
// keeps a queue.
func eachQueueMode(t *testing.T, suffix string, f func(t *testing.T, mode election.Mode)) {
	for _, mode := range []election.Mode{election.ModeLatch, election.ModeSelector} {
		t.Run(string(mode)+suffix, func(t *testing.T) { f(t, mode) })
	}
}

// TestZKCreateReplyLost: the connection drops after ZooKeeper has applied a
// participant's create but before the reply arrives. The participant must
// end up with exactly one node, adopting the one it created while its
// session lives and never one of an older session (CURATOR-498), and leave
// no orphan. The create is the re-join after a Release (the first join also
// creates the parent containers, which would take the drop).
func TestZKCreateReplyLost(t *testing.T) {
	ens := startZKRunningStale(t)
	eachQueueMode(t, "", func(t *testing.T, mode election.Mode) {
		h, p := startChainedLeader(t, ens, "/lost-reply/"+string(mode), mode, 2, longSession)
		sid := p.sess.ID()
		var made znode
		applied := func() bool {
			ns := h.owned(sid)
			if len(ns) > 0 {
				made = ns[0]
			}
			return len(ns) > 0
		}
		base, _ := p.inner.Counts()
		// The connection stays refused until the create is known to be
		// applied: a quick reconnect could otherwise make the server drop
		// the old connection's request unprocessed.
		p.releaseLosingReply(t)
		waitFor(t, liveWithin, "the create of "+p.name+" to reach ZooKeeper", applied)
		p.proxy.Heal()
		waitFor(t, 15*time.Second, p.name+" to join again", func() bool {
			st := p.status()
			return st.Joined && st.State == zksession.StateConnected && st.Node != ""
		})
		h.waitNodesConsistent(10*time.Second, 500*time.Millisecond)
		if got := p.sess.ID(); got != sid {
			t.Fatalf("%s's session changed (0x%x -> 0x%x): the outage was too long to test adoption", p, sid, got)
		}
		if node := p.status().Node; node != made.name {
			t.Fatalf("%s joined with %s, not the node its lost create made (%v)", p, node, made)
		}
		if creates, _ := p.inner.Counts(); creates-base != 1 {
			t.Fatalf("%s sent %d creates since the drop, want 1: the node whose reply was lost must be adopted", p, creates-base)
		}
		h.waitOneLeader(liveWithin)
		t.Logf("%s: adopted %v; states %v, counters %+v", p, made, h.chk.states(p), p.el.Counters())
	})

	// The session also expires while the connection is down: the node made
	// by the old session must not be adopted (CURATOR-498); the participant
	// rejoins with a node of its new session.
	eachQueueMode(t, "-expired", func(t *testing.T, mode election.Mode) {
		h, p := startChainedLeader(t, ens, "/lost-reply-expired/"+string(mode), mode, 2, nil)
		oldSID := p.sess.ID()
		owned := func() bool { return len(h.owned(oldSID)) > 0 }
		p.releaseLosingReply(t)
		waitFor(t, liveWithin, "the create of "+p.name+"'s old session to reach ZooKeeper", owned)
		waitFor(t, sessionTimeout+liveWithin, "ZooKeeper to expire "+p.name+"'s session (its node gone)", func() bool { return !owned() })
		p.proxy.Heal()
		waitFor(t, 15*time.Second, p.name+" to rejoin with a new session", func() bool {
			st := p.status()
			return st.Joined && st.State == zksession.StateConnected && st.SessionID != oldSID && st.SessionID != 0
		})
		h.waitNodesConsistent(10*time.Second, 500*time.Millisecond)
		h.waitOneLeader(liveWithin)
		t.Logf("%s: states %v, counters %+v", p, h.chk.states(p), p.el.Counters())
	})
}

// TestZKResignDuringCreate: Resign while the create is in flight (applied
// by ZooKeeper, reply lost, connection down) gives up at its deadline, but
// once the connection is back no node of that participant may remain
// (CURATOR-18, -45, -79), although its session lives on.
func TestZKResignDuringCreate(t *testing.T) {
	ens := startZKRunningStale(t)
	eachQueueMode(t, "", func(t *testing.T, mode election.Mode) {
		h, p := startChainedLeader(t, ens, "/resign-in-flight/"+string(mode), mode, 1, longSession)
		sid := p.sess.ID()
		owned := func() []znode { return h.owned(sid) }
		p.releaseLosingReply(t)
		waitFor(t, liveWithin, "the create of "+p.name+" to reach ZooKeeper", func() bool { return len(owned()) > 0 })
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := p.el.Resign(ctx)
		cancel()
		t.Logf("Resign while disconnected: %v; node on the server: %v", err, owned())
		p.proxy.Heal()
		waitFor(t, liveWithin, p.name+"'s session back", func() bool { return p.sess.State() == zksession.StateConnected })
		if p.sess.ID() != sid {
			t.Fatalf("%s's session changed (0x%x -> 0x%x): the outage was too long to test anything", p, sid, p.sess.ID())
		}
		waitFor(t, liveWithin, "no node of "+p.name+" left", func() bool { return len(owned()) == 0 })
		holdFor(t, 300*time.Millisecond, "no node of "+p.name, func() bool { return len(owned()) == 0 })
		waitFor(t, liveWithin, p.name+"'s Run to return after Resign", p.runReturned)
		if p.leads() {
			t.Fatalf("%s leads after Resign", p)
		}
	})
}

// serversBack starts every server again and waits for one leader, named by
// all, and still the only one after a while.
func (h *harness) serversBack() {
	h.t.Helper()
	if err := h.ens.StartAll(); err != nil {
		h.t.Fatal(err)
	}
	l := h.waitOneLeader(20 * time.Second)
	h.waitAllJoined(liveWithin)
	h.waitAgreement(l)
	holdFor(h.t, 300*time.Millisecond, "exactly one leader", func() bool { return len(h.leaders()) == 1 })
}

// TestZKServerOutages: the Curator scenarios that stop the server.
func TestZKServerOutages(t *testing.T) {
	ens := startZK(t)

	t.Run("no-server-at-start", func(t *testing.T) {
		if err := ens.StopAll(); err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, ens, "/outage/late-server", election.ModeLatch)
		ps := h.startN(3, opts{})
		for _, p := range ps {
			if st := p.status(); st.IsLeader || st.State == zksession.StateConnected {
				t.Fatalf("%s with no server: %s", p, describe(p, st))
			}
		}
		h.serversBack()
	})

	// Ten latches lose the server: no leader once the leases lapse (within
	// the session timeout); back, exactly one.
	t.Run("lost-connection-10", func(t *testing.T) {
		h := newHarness(t, ens, "/outage/ten", election.ModeLatch)
		h.startN(10, opts{})
		h.waitAllJoined(liveWithin)
		l := h.waitOneLeader(liveWithin)
		h.waitAgreement(l)
		cut := time.Now()
		if err := ens.StopAll(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, sessionTimeout, "no leader once the server is gone", func() bool { return len(h.leaders()) == 0 })
		t.Logf("%s stopped leading %v after the server stopped", l, h.chk.lastLeading(l).Sub(cut).Round(time.Millisecond))
		h.serversBack()
		h.waitNodesConsistent(10*time.Second, 200*time.Millisecond)
	})

	// Stop and restart the server four times: each time every participant
	// goes through suspended and back to connected (as Observe reports it),
	// and a leader is regained.
	t.Run("restart-4-times", func(t *testing.T) {
		h := newHarness(t, ens, "/outage/restarts", election.ModeLatch)
		ps := h.startN(3, opts{})
		h.waitAllJoined(liveWithin)
		h.waitAgreement(h.waitOneLeader(liveWithin))

		var mu sync.Mutex
		seen := map[*participant][]zksession.State{}
		eachUntilEnd(t, ps, func(ctx context.Context, p *participant) {
			for st := range p.el.Observe(ctx) {
				mu.Lock()
				if s := seen[p]; len(s) == 0 || s[len(s)-1] != st.State {
					seen[p] = append(s, st.State)
				}
				mu.Unlock()
			}
		})
		observed := func(p *participant) []zksession.State {
			mu.Lock()
			defer mu.Unlock()
			return append([]zksession.State(nil), seen[p]...)
		}
		allLast := func(want zksession.State) func() bool {
			return func() bool {
				for _, p := range ps {
					if s := observed(p); len(s) == 0 || s[len(s)-1] != want {
						return false
					}
				}
				return true
			}
		}
		for i := range 4 {
			if err := ens.StopAll(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, liveWithin, fmt.Sprintf("round %d: every participant suspended", i), allLast(zksession.StateSuspended))
			if err := ens.StartAll(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 20*time.Second, fmt.Sprintf("round %d: every participant connected", i), allLast(zksession.StateConnected))
			l := h.waitOneLeader(20 * time.Second)
			h.waitAgreement(l)
		}
		for _, p := range ps {
			s := observed(p)
			n := 0
			for _, st := range s {
				if st == zksession.StateSuspended {
					n++
				}
			}
			if n < 4 {
				t.Errorf("%s: states %v: suspended %d times, want 4", p, s, n)
			}
			t.Logf("%s: states %v", p, s)
		}
		h.waitNodesConsistent(10*time.Second, 200*time.Millisecond)
	})
}

// stalledWithin is less than go-zookeeper's unbounded handshake (10 x 2/3 of the
// 2 s session timeout) and far more than electd's bound (1 s) plus a session.
const stalledWithin = 12 * time.Second

// TestZKStalledServer: a server that accepts connections but never answers
// (a long GC pause, a stalled disk) must not hold a participant for long.
// go-zookeeper alone waits 10 × 2/3 of the session timeout (13 s here) for
// the ConnectResponse; electd bounds the handshake as the Java client does
// (session timeout / servers, at most a third of it, at least 1 s) and moves
// on to the next server.
func TestZKStalledServer(t *testing.T) {
	ens := startZK(t)
	stall, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var held sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for {
			c, err := stall.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			held.Add(1)
			go func() { // hold it open, unanswered
				defer held.Done()
				<-done
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() { stall.Close(); close(done); held.Wait() })

	// go-zookeeper shuffles the servers: try sessions until two of them met
	// the stalled server first.
	servers := []string{stall.Addr().String(), ens.Servers()[0]}
	met := 0
	for attempt := 0; met < 2; attempt++ {
		if attempt == 16 {
			t.Fatalf("the stalled server was tried first only %d times in %d sessions", met, attempt)
		}
		before := accepted.Load()
		start := time.Now()
		sess, err := zksession.Connect(zksession.Config{Servers: servers, SessionTimeout: sessionTimeout})
		if err != nil {
			t.Fatal(err)
		}
		// Sooner than go-zookeeper's own wait for a ConnectResponse (13.3 s) would
		// have let it try the next server: that is the whole claim, however slow
		// the machine.
		ctx, cancel := context.WithTimeout(context.Background(), stalledWithin)
		err = sess.WaitConnected(ctx)
		cancel()
		took := time.Since(start)
		sess.Close()
		if err != nil {
			t.Fatalf("attempt %d: no session within %v (stalled server tried %d times): %v", attempt, stalledWithin, accepted.Load()-before, err)
		}
		if accepted.Load() > before {
			met++
			t.Logf("attempt %d: session after %v, past the stalled server", attempt, took.Round(time.Millisecond))
		}
	}
}
