package chaos

import (
	"slices"
	"strings"
	"time"
)

// The ZooKeeper-side faults: a server killed (4), isolated (5), the whole
// ensemble down (6), a standalone server restarted (7).

// noChangeGap is how long the leader may go unseen as leader in a "no
// leadership change" window. Every answer it gives there must be a 200 with
// the old token (a 503 is a change however short), so an uncovered interval
// can only come from requests that went unanswered: this bounds those.
const noChangeGap = 100 * time.Millisecond

// leaderSession reads the leader's own view: session id and fencing token.
func (r *run) leaderSession(l *Proc) (int64, int64) {
	r.t.Helper()
	ctx, cancel := r.ctx(2 * time.Second)
	defer cancel()
	v, err := l.View(ctx)
	if err != nil || v.Leader == nil || v.Leader.ID != l.ID() {
		r.fatalf("/leader of %s: %+v, %v", l.ID(), v, err)
	}
	return SessionID(v.Leader.Session), v.Leader.FencingToken
}

// waitSessionOn waits until a live server other than not (or, when not < 0,
// any server) holds session sid's connection, and returns its index.
func (r *run) waitSessionOn(sid int64, not int, d time.Duration) int {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if i := r.env.memberOf(sid); i >= 0 && i != not {
			return i
		}
		if time.Now().After(deadline) {
			r.fatalf("session 0x%x on no server within %s", sid, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkNoChange checks that l kept leading in [from, to] with the same
// session and token (see NoChange and noChangeGap).
func (r *run) checkNoChange(l *Proc, sid, token int64, from, to time.Duration) {
	r.t.Helper()
	ctx, cancel := r.ctx(5 * time.Second)
	defer cancel()
	if err := r.obs.WaitCovered(ctx, to, l.ID()); err != nil {
		r.errorf(Interval{from, to}, "no answer from %s after %s: %v", l.ID(), ms(to), err)
	}
	samples := r.obs.Samples()
	for _, p := range NoChange(samples, from, to, l.ID(), token, noChangeGap) {
		r.errorf(Interval{from, to}, "leadership changed: %s", p)
	}
	var mine []Sample
	for _, s := range samples {
		if s.Who == l.ID() && s.Send >= from && s.Recv <= to {
			mine = append(mine, s)
		}
	}
	g := LongestLeaderless(mine, from, to)
	sid2, token2 := r.leaderSession(l)
	r.event("no-change window [%s, %s]: %d answers from %s, longest unseen %s; session 0x%x -> 0x%x, token %d -> %d",
		ms(from), ms(to), len(mine), l.ID(), g, sid, sid2, token, token2)
	if sid2 != sid || token2 != token {
		r.errorf(Interval{from, to}, "leader %s: session 0x%x -> 0x%x, token %d -> %d: want both unchanged", l.ID(), sid, sid2, token, token2)
	}
}

// faultServerKill (fault 4) kills -9 the ZooKeeper server holding the
// leader's session in a 3-server ensemble: a follower, or the ZooKeeper
// leader itself. With on_suspend hold nothing may change: the leader
// answers 200 with the same token throughout, on the same session (see
// checkNoChange). With step-down it may hand leadership back and forth, but
// safety holds and a leader follows within the bound.
func faultServerKill(zkLeader bool) func(*run) {
	return func(r *run) {
		s := r.env.follower()
		if zkLeader {
			s = r.env.zkLeader()
		}
		l := r.setup(3, func(i int) int {
			if i == 0 {
				return s
			}
			return -1
		})
		sid, token := r.leaderSession(l)
		if on := r.env.memberOf(sid); on != s {
			r.fatalf("setup: leader %s's session 0x%x is on server %d, want %d", l.ID(), sid, on, s)
		}
		m := r.env.members()[s]
		tb := r.now()
		ctx, cancel := r.ctx(5 * time.Second)
		defer cancel()
		if _, err := r.obs.WaitLeader(ctx, tb); err != nil {
			r.fatalf("no 200 before the fault: %v", err)
		}
		t0 := r.now()
		m.Kill()
		r.event("kill -9 ZooKeeper server %d (%s, was %s), which holds leader %s's session 0x%x",
			s, m.Addr(), map[bool]string{true: "leader", false: "follower"}[zkLeader], l.ID(), sid)
		if r.spec.OnSuspend == "hold" {
			on := r.waitSessionOn(sid, s, r.timeout)
			r.event("session 0x%x moved to server %d", sid, on)
			r.holdUntil(r.now() + 500*time.Millisecond)
		}
		r.restartMember(s)
		if r.spec.OnSuspend == "hold" {
			r.checkNoChange(l, sid, token, tb, r.now())
		} else {
			te := r.now()
			r.expectLeader("leader after the server's restart", te)
			r.expectNoLongGap("from the server's kill on", t0, te)
		}
		r.finish()
	}
}

func (r *run) restartMember(i int) {
	r.t.Helper()
	m := r.env.members()[i]
	if err := startMember(m); err != nil {
		r.fatalf("restart server %d: %v", i, err)
	}
	if err := r.env.waitReady(time.Minute); err != nil {
		r.fatalf("ensemble not ready after restarting server %d: %v", i, err)
	}
	r.event("ZooKeeper server %d restarted and ready", i)
}

// faultIsolate (fault 5) cuts the server S holding the leader's session off
// from its peers while it keeps its client connections, with syncLimit x
// tickTime longer than the session timeout: S keeps answering the leader's
// pings and reads (until syncLimit x tickTime) while the ZooKeeper leader
// expires the session.
//
// partition (5a): the leader is on S's side of the partition (its proxies to
// the other servers are blackholed too), so its session certainly expires.
// The old leader must stop answering 200 before another participant starts,
// and within the session timeout of the isolation.
//
// !partition (5b): only S is isolated. go-zookeeper gives up on S after two
// thirds of the timeout without an answer (its pings queue behind the stuck
// lease renewal) and may move the session to a healthy server before it
// expires; then the old leader may legitimately lead on. Safety and liveness
// (any leader) are checked.
func faultIsolate(partition bool) func(*run) {
	return func(r *run) {
		if lim := time.Duration(r.env.syncLimit) * r.env.tick; lim <= r.spec.Session {
			r.t.Fatalf("fault 5 needs syncLimit x tickTime (%s) > session timeout (%s)", lim, r.spec.Session)
		}
		s := r.env.follower()
		var others []int
		for i := range r.env.members() {
			if i != s {
				others = append(others, i)
			}
		}
		l := r.setup(3, func(i int) int {
			if i == 0 {
				return s
			}
			return others[(i-1)%len(others)]
		})
		sid, _ := r.leaderSession(l)
		if on := r.env.memberOf(sid); on != s {
			r.fatalf("setup: leader %s's session 0x%x is on server %d, want %d", l.ID(), sid, on, s)
		}
		m := r.env.members()[s]
		pxs := r.proxiesOf(l)
		t0 := r.now()
		r.env.ens.Isolate(m)
		if partition {
			for _, i := range others {
				pxs[i].Blackhole()
			}
			r.event("partition {server %d (follower, holds leader %s's session 0x%x), %s} | {servers %v, others}", s, l.ID(), sid, l.ID(), others)
		} else {
			r.event("isolated ZooKeeper server %d (follower, holds leader %s's session 0x%x) from its peers", s, l.ID(), sid)
		}
		if first, ok := r.firstNotOK(l, t0, t0+r.timeout); !ok {
			r.errorf(Interval{t0, t0 + r.timeout + time.Second}, "old leader %s did not answer 503 within the session timeout %s of the isolation", l.ID(), r.timeout)
		} else {
			r.event("old leader %s answered %d %s after the isolation", l.ID(), first.Status, ms(first.Recv-t0))
		}
		if !partition {
			r.expectLeader("a leader after isolating "+l.ID()+"'s server", t0)
			r.holdUntil(t0 + time.Duration(r.env.syncLimit)*r.env.tick + time.Second)
			tr := r.now()
			r.expectNoLongGap("after the isolation", t0, tr)
			r.env.ens.Rejoin(m)
			if err := r.env.waitReady(time.Minute); err != nil {
				r.fatalf("ensemble not ready after rejoin: %v", err)
			}
			r.event("server %d rejoined; ensemble ready", s)
			r.expectLeader("leader after rejoin", tr)
			r.finish()
			return
		}
		next, ok := r.expectLeader("another leader after isolating "+l.ID()+" with its server", t0, l)
		if ok {
			var last Sample
			for _, x := range r.obs.Samples() {
				if x.Who == l.ID() && x.OK() && x.Send < next.Send && x.Recv > last.Recv {
					last = x
				}
			}
			r.event("old leader %s's last 200 received at %s; new leader %s's first 200 sent at %s", l.ID(), ms(last.Recv), next.Who, ms(next.Send))
			if last.Recv >= next.Send {
				r.errorf(Interval{last.Send - time.Second, next.Recv + time.Second}, "SAFETY: old leader's last 200 %v is not before the new leader's first %v", last, next)
			}
		}
		r.holdUntil(t0 + time.Duration(r.env.syncLimit)*r.env.tick + time.Second)
		tr := r.now()
		r.noClaims(l, t0+r.timeout, tr, "its session had certainly expired on the ZooKeeper leader")
		r.env.ens.Rejoin(m)
		for _, px := range pxs {
			px.Heal()
		}
		if err := r.env.waitReady(time.Minute); err != nil {
			r.fatalf("ensemble not ready after rejoin: %v", err)
		}
		r.event("server %d rejoined, %s's connections healed; ensemble ready", s, l.ID())
		r.expectLeader("leader after rejoin", tr)
		r.finish()
	}
}

// firstNotOK waits until deadline (observer time) for who's first non-200
// answer sent at or after t.
func (r *run) firstNotOK(who *Proc, t, deadline time.Duration) (Sample, bool) {
	ctx, cancel := r.ctx(max(deadline-r.now(), 0))
	defer cancel()
	s, err := r.obs.WaitFor(ctx, func(s Sample) bool {
		return s.Who == who.ID() && s.Send >= t && !s.OK() && s.Status != 0
	})
	return s, err == nil && s.Recv <= deadline
}

// faultEnsembleStop (fault 6) stops every ZooKeeper server for longer than
// the session timeout: once the leases lapse nobody may lead, and after the
// restart exactly one participant leads within the bound.
func faultEnsembleStop(r *run) {
	l := r.setup(3, nil)
	t0 := r.now()
	if err := r.env.ens.StopAll(); err != nil {
		r.fatalf("stop all servers: %v", err)
	}
	r.event("stopped all ZooKeeper servers (leader %s)", l.ID())
	r.holdUntil(t0 + r.timeout*3/2 + r.env.tick)
	t1 := r.now()
	r.noClaims(nil, t0+r.timeout, t1, "ZooKeeper had been down for a whole session timeout")
	if last, ok := LastOK(r.obs.Samples(), l.ID()); ok {
		r.event("last 200 of %s received %s after the stop", l.ID(), ms(last.Recv-t0))
	}
	if err := r.env.ens.StartAll(); err != nil {
		r.fatalf("restart all servers: %v", err)
	}
	t2 := r.now()
	r.event("all ZooKeeper servers restarted and ready (%s after StartAll)", ms(t2-t1))
	r.expectLeader("leader after the ensemble restart", t2)
	r.finish()
}

// faultRestart (fault 7) restarts a standalone server within the session
// timeout: sessions survive (same nodes, same owners), and with hold the
// leadership does not change (see checkNoChange).
func faultRestart(r *run) {
	l := r.setup(3, nil)
	sid, token := r.leaderSession(l)
	before, err := readNodes(r.env.servers(), r.path, 10*time.Second)
	if err != nil {
		r.fatalf("%v", err)
	}
	tb := r.now()
	ctx, cancel := r.ctx(5 * time.Second)
	defer cancel()
	if _, err := r.obs.WaitLeader(ctx, tb); err != nil {
		r.fatalf("no 200 before the fault: %v", err)
	}
	m := r.env.members()[0]
	t0 := r.now()
	if err := stopMember(m); err != nil {
		r.fatalf("stop server: %v", err)
	}
	r.event("stopped the ZooKeeper server")
	r.restartMember(0)
	t1 := r.now()
	r.event("server back %s after the stop", ms(t1-t0))
	if r.spec.OnSuspend == "hold" {
		r.waitSessionOn(sid, -1, r.timeout)
		r.event("leader %s's session 0x%x reconnected", l.ID(), sid)
		r.holdUntil(r.now() + 500*time.Millisecond)
		r.checkNoChange(l, sid, token, tb, r.now())
		after, err := readNodes(r.env.servers(), r.path, 10*time.Second)
		if err != nil {
			r.fatalf("%v", err)
		}
		byName := func(a, b Node) int { return strings.Compare(a.Name, b.Name) }
		slices.SortFunc(before, byName)
		slices.SortFunc(after, byName)
		if !slices.Equal(before, after) {
			r.errorf(Interval{t0, r.now()}, "sessions did not survive the restart: nodes %s before, %s after", nodesString(before), nodesString(after))
		}
	} else {
		r.expectLeader("leader after the server restart", t1)
		r.expectNoLongGap("from the server's stop on", t0, r.now())
	}
	r.finish()
}
