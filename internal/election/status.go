package election

import (
	"time"

	"github.com/electd/electd/internal/election/zksession"
)

// Status returns the current snapshot from memory; it never waits on ZooKeeper.
func (e *Elector) Status() Status {
	st, sid, lease := e.s.Snapshot()
	timeout := e.s.Timeout()
	v := e.viewed()
	why := e.judge(&v, st, sid, lease)
	out := Status{
		Mode:           e.cfg.Mode,
		Path:           e.cfg.Path,
		ID:             e.cfg.ID,
		Advertise:      e.cfg.Advertise,
		Proxy:          e.cfg.Proxy,
		Node:           v.node,
		Election:       e.electionID(),
		Candidate:      v.standing,
		IsLeader:       why == ReasonLeader,
		Why:            why,
		Reason:         reasonText(why, &v, st),
		LeaseRemaining: lease,
		State:          st,
		SessionID:      sid,
		SessionTimeout: timeout,
		Joined:         v.joined && (st == zksession.StateConnected || st == zksession.StateSuspended),
		Leader:         v.leader,
		ObservedAt:     v.observedAt,
		Participants:   v.participants,
		Misconfigured:  v.misconfigured,
	}
	if out.IsLeader {
		out.FencingToken = v.token
	}
	return out
}

// leads is Status().IsLeader: the recipe's host asks it before a release
// or a switchover.
func (e *Elector) leads() bool { return e.Status().IsLeader }

// judge decides leadership from the view and the session at this instant.
func (e *Elector) judge(v *view, st zksession.State, sid int64, lease time.Duration) Reason {
	switch {
	case v.misconfigured != "":
		return ReasonMisconfigured
	case e.draining.Load():
		return ReasonShuttingDown
	case !v.standing:
		return ReasonWithdrawn
	case !v.holds:
		switch {
		case v.duplicate != "":
			return ReasonDuplicateID
		case v.refused != "":
			return ReasonRefused
		case v.leader != nil:
			return ReasonFollowing
		case !v.joined:
			return ReasonNotJoined
		}
		return ReasonNoLeader
	case v.nodeSession != sid:
		return ReasonSessionChanged
	case st == zksession.StateSuspended && e.cfg.OnSuspend == StepDown:
		return ReasonSuspendedStepDown
	case st != zksession.StateConnected && st != zksession.StateSuspended:
		return ReasonNoSession
	case lease <= 0:
		return ReasonLeaseExpired
	case e.clock.Now().Before(v.claimedAt.Add(e.cfg.ClaimDelay)):
		return ReasonClaimDelay
	}
	return ReasonLeader
}
