package chaos

import (
	"fmt"
	"time"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/invariant"
)

// A ZooKeeper-side fault (the leader's server killed, the standalone server restarted)
// cuts the leader's session off for a while. With on_suspend hold, docs/design/election-and-lease.md
// ("The lease") promises that a disconnect shorter than the lease changes nothing; a longer one lets the
// lease lapse, rightly: the leader stops claiming, and claims again with the same
// session and token once it has renewed, while nobody else may lead since its node
// stayed. How long the outage lasts is up to the machine (a JVM restart took 7 s of an
// 8 s session on a loaded machine), so the check measures it and applies the promise
// that fits.

// noChangeGap bounds how long the observer may miss the leader in a "no change" window
// while it sees the others: every answer there must be a claim with the old token (a 503
// is a change, however short), so a gap can only come from the leader's questions going
// unanswered. Stretches in which nobody was seen (the observer stalled) do not count.
const noChangeGap = time.Second

// renewSlack is what the leader may need after its session is back to renew its lease:
// the renewal's round-trip on a loaded machine. An outage that ends closer than this to
// the lease's end may or may not let it lapse.
const renewSlack = time.Second

// outage is what a ZooKeeper-side fault cost the leader's session, on the observer's clock.
type outage struct {
	fault time.Duration // the fault began
	back  time.Duration // the session's new connection was established
	// down, when set, is when no server could answer the leader at all (a standalone
	// server from the end of its stop to the session's new connection): no renewal can
	// succeed there.
	down    invariant.Interval
	hasDown bool
}

// holdVerdict is what judgeHold found.
type holdVerdict struct {
	leaseEnd invariant.Interval // when the lease the leader had at the fault ran out
	short    bool               // the outage ended a renewal's round-trip before that
	problems []string
}

func (v holdVerdict) String() string {
	if v.short {
		return fmt.Sprintf("its lease at the fault ran out in %s, a renewal after the outage: no change at all", v.leaseEnd)
	}
	return fmt.Sprintf("its lease at the fault ran out in %s, not clearly after the outage: the lease may lapse", v.leaseEnd)
}

// judgeHold checks leader who, which led with token before the fault, over [from, to]:
// no change at all if the outage ended a renewal's round-trip before the lease the leader
// last reported before the fault ran out; otherwise no move of leadership, and, while no
// server could renew the lease, no claim after it must have run out. It is a pure
// function of the samples.
func judgeHold(samples []invariant.Sample, who string, token int64, from, to time.Duration, o outage) holdVerdict {
	last, ok := invariant.LastClaim(invariant.Claims(samples, who, 0, o.fault), who)
	if !ok {
		return holdVerdict{problems: []string{who + " made no claim before the fault"}}
	}
	v := holdVerdict{leaseEnd: invariant.Interval{From: last.Send + last.Lease, To: last.Recv + last.Lease}}
	v.short = o.back+renewSlack < v.leaseEnd.From
	if v.short {
		for _, p := range invariant.NoChange(samples, from, to, who, token, noChangeGap, invariant.Blind(samples, from, to, stall)) {
			v.problems = append(v.problems, "leadership changed in an outage shorter than the lease: "+p)
		}
		return v
	}
	for _, p := range invariant.NoMove(samples, from, to, who, token) {
		v.problems = append(v.problems, "leadership moved: "+p)
	}
	if o.hasDown {
		v.problems = append(v.problems, claimsPastLease(samples, who, o)...)
	}
	return v
}

// claimsPastLease finds who's claims after its lease must have run out while no server
// could renew it: a lease lasts at most as long as the longest who reported before the
// fault (plus a round-trip: it reports what is left after the renewal's answer), counted
// from the last moment a server could answer.
func claimsPastLease(samples []invariant.Sample, who string, o outage) []string {
	var lease time.Duration
	for _, s := range invariant.Claims(samples, who, 0, o.fault) {
		lease = max(lease, s.Lease)
	}
	from := o.down.From + lease + renewSlack
	bad := invariant.Claims(samples, who, from, o.down.To)
	if len(bad) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s claimed %d times after its lease (at most %s) ran out with no server up, in [%s, %s]: first %v",
		who, len(bad), invariant.Ms(lease), invariant.Ms(from), invariant.Ms(o.down.To), bad[0])}
}

// checkHold runs judgeHold on leader l over [from, to], then checks that l leads again
// after the outage, on the same session (sid) and with the same token.
func (r *run) checkHold(l *electdtest.Proc, sid, token int64, from, to time.Duration, o outage) {
	r.t.Helper()
	ctx, cancel := r.ctx(5 * time.Second)
	defer cancel()
	if err := r.obs.WaitCovered(ctx, to, l.Name); err != nil {
		r.errorf(window(from, to), "no answer from %s after %s: %v", l.Name, invariant.Ms(to), err)
	}
	samples := r.obs.Samples()
	v := judgeHold(samples, l.Name, token, from, to, o)
	r.event("outage of %s's session: fault at %s, back on a server at %s; %v", l.Name, invariant.Ms(o.fault), invariant.Ms(o.back), v)
	for _, p := range v.problems {
		r.errorf(window(from, to), "%s", p)
	}
	r.expectClaimAgain(l, token, o.back)
	sid2, token2 := r.leaderSession(l)
	g := invariant.LongestLeaderless(invariant.Claims(samples, l.Name, from, to), from, to)
	r.event("hold window [%s, %s]: longest stretch without a claim from %s %s; session 0x%x -> 0x%x, token %d -> %d",
		invariant.Ms(from), invariant.Ms(to), l.Name, g, sid, sid2, token, token2)
	if sid2 != sid || token2 != token {
		r.errorf(window(from, to), "leader %s: session 0x%x -> 0x%x, token %d -> %d: want both unchanged", l.Name, sid, sid2, token, token2)
	}
}

// expectClaimAgain waits up to the liveness bound for l to claim with token in a question
// sent after back.
func (r *run) expectClaimAgain(l *electdtest.Proc, token int64, back time.Duration) {
	r.t.Helper()
	ctx, cancel := r.ctx(r.bound())
	defer cancel()
	s, err := r.obs.WaitFor(ctx, func(s invariant.Sample) bool { return s.Who == l.Name && s.Leader && s.Send >= back })
	switch {
	case err != nil:
		r.errorf(window(back, r.now()), "%s did not lead again within %s of its session's return", l.Name, r.bound())
	case s.Token != token:
		r.errorf(window(back, s.Recv), "%s leads again with token %d, had %d: %v", l.Name, s.Token, token, s)
	}
}
