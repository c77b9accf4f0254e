package election

import (
	"context"
	"log/slog"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/election/zksession"
)

// publisher turns changes of Status into Observe values, Recorder counts and
// log lines. It wakes on every session change, view change and at the next
// instant Status can change by itself (lease end, claim delay end).
func (e *Elector) publisher(sess <-chan struct{}, stop <-chan struct{}) {
	var timer clock.Timer
	wake := make(chan struct{}, 1)
	for {
		st := e.Status()
		e.emit(st)
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if d := e.nextChange(st); d > 0 {
			timer = e.clock.AfterFunc(d, func() {
				select {
				case wake <- struct{}{}:
				default:
				}
			})
		}
		select {
		case <-sess:
		case <-e.changed:
		case <-wake:
		case <-stop:
			if timer != nil {
				timer.Stop()
			}
			e.emit(e.Status())
			e.closeSubs()
			return
		}
	}
}

// nextChange is when Status may change without any event: when the lease
// runs out on a leader, or when claim_delay ends.
func (e *Elector) nextChange(st Status) time.Duration {
	if st.IsLeader {
		return st.LeaseRemaining + time.Millisecond
	}
	e.mu.Lock()
	holds, at := e.v.holds, e.v.claimedAt
	e.mu.Unlock()
	if holds && st.Why == ReasonClaimDelay {
		return at.Add(e.cfg.ClaimDelay).Sub(e.clock.Now()) + time.Millisecond
	}
	return 0 // e.g. lease expired: a renewal wakes the publisher through the session
}

// emit compares st with the last published status and reports the difference.
func (e *Elector) emit(st Status) {
	e.mu.Lock()
	prev, had := e.last, e.pubOn
	e.last, e.pubOn = st, true
	hint, ownTok := e.v.lossHint, e.v.ownToken
	switch {
	case st.IsLeader && (!had || !prev.IsLeader):
		e.lostCh = make(chan struct{})
		e.v.lossHint = ""
	case !st.IsLeader && had && prev.IsLeader:
		if e.lostCh != nil {
			close(e.lostCh)
			e.lostCh = nil
		}
		e.v.lossHint = ""
	}
	changed := !had || significant(prev, st)
	if changed {
		for ch := range e.subs {
			offer(ch, st)
		}
	}
	e.mu.Unlock()

	if !had {
		return
	}
	if st.State != prev.State && (st.State == zksession.StateSuspended || st.State == zksession.StateExpired) {
		// The session logs the connection; this line ties it to the election.
		e.log.Warn(string(st.State), "session", sessionHex(prev.SessionID), "node", prev.Node,
			"fencing_token", ownTok, "was_leader", prev.IsLeader)
	}
	if st.IsLeader && !prev.IsLeader {
		e.rec.LeadershipAcquired()
		e.log.Info("elected", "session", sessionHex(st.SessionID), "node", st.Node, "fencing_token", st.FencingToken)
	}
	if !st.IsLeader && prev.IsLeader {
		reason := e.lossReason(hint, prev, st)
		e.rec.LeadershipLost(reason)
		level := slog.LevelWarn // leadership taken away: worth an operator's look
		if reason == LossReleased || reason == LossTerm || reason == LossShutdown {
			level = slog.LevelInfo // given up on purpose
		}
		e.log.Log(context.Background(), level, "revoked", "reason", string(reason), "detail", st.Reason,
			"session", sessionHex(prev.SessionID), "node", prev.Node, "fencing_token", prev.FencingToken)
	}
	if st.Leader != nil && (prev.Leader == nil || !sameNode(prev.Leader, st.Leader)) {
		e.rec.LeaderChanged()
		e.log.Info("leader", "leader_id", st.Leader.ID, "leader_node", st.Leader.Node,
			"leader_session", sessionHex(st.Leader.Session), "fencing_token", st.Leader.FencingToken)
	}
}

func (e *Elector) lossReason(hint LossReason, prev, st Status) LossReason {
	switch {
	case e.draining.Load():
		return LossShutdown
	case hint != "":
		return hint
	case st.State == zksession.StateExpired || st.SessionID != prev.SessionID:
		return LossExpired
	}
	return LossSuspended
}

// significant is a change observers care about: leader, own leadership,
// connection state, joined, misconfiguration or the election's identity
// (a forwarding proxy names it on every forward).
func significant(a, b Status) bool {
	if a.IsLeader != b.IsLeader || a.State != b.State || a.Joined != b.Joined ||
		a.Misconfigured != b.Misconfigured || a.SessionID != b.SessionID || a.Reason != b.Reason ||
		a.Election != b.Election {
		return true
	}
	if (a.Leader == nil) != (b.Leader == nil) {
		return true
	}
	return a.Leader != nil && (!sameNode(a.Leader, b.Leader) ||
		a.Leader.Advertise != b.Leader.Advertise || a.Leader.Proxy != b.Leader.Proxy)
}

func sameNode(a, b *Participant) bool {
	return a.Node == b.Node && a.Session == b.Session && a.ID == b.ID
}

// offer replaces any unread value: a slow reader sees the latest status.
func offer(ch chan Status, st Status) {
	select {
	case ch <- st:
		return
	default:
	}
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- st:
	default:
	}
}

func (e *Elector) closeSubs() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.subs {
		delete(e.subs, ch)
		close(ch)
	}
	if e.lostCh != nil {
		close(e.lostCh)
		e.lostCh = nil
	}
}
