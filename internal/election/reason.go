package election

import "time"

// Reason is why a participant leads or does not, as a code: the publisher
// and callers branch on it; Status.Reason is its text.
type Reason int

const (
	ReasonLeader            Reason = iota // leads: lowest node, lease valid
	ReasonFollowing                       // another participant leads
	ReasonNoLeader                        // joined, no leader known yet
	ReasonNotJoined                       // no node (yet)
	ReasonMisconfigured                   // the path holds another mode's nodes
	ReasonRefused                         // ZooKeeper refused a write (permissions)
	ReasonShuttingDown                    // Drain was called
	ReasonWithdrawn                       // not a candidate (SetCandidate)
	ReasonSessionChanged                  // the node belongs to an older session
	ReasonSuspendedStepDown               // disconnected, on_suspend: step-down
	ReasonNoSession                       // connecting, expired or closed
	ReasonLeaseExpired                    // the lease ran out
	ReasonClaimDelay                      // leads, but claim_delay has not passed
)

// judge decides leadership from the view and the session at this instant.
func (e *Elector) judge(v *view, st State, sid int64, lease time.Duration) Reason {
	switch {
	case v.misconfigured != "":
		return ReasonMisconfigured
	case e.draining.Load():
		return ReasonShuttingDown
	case !v.standing:
		return ReasonWithdrawn
	case !v.holds:
		switch {
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
	case st == StateSuspended && e.cfg.OnSuspend == StepDown:
		return ReasonSuspendedStepDown
	case st != StateConnected && st != StateSuspended:
		return ReasonNoSession
	case lease <= 0:
		return ReasonLeaseExpired
	case e.clock.Now().Before(v.claimedAt.Add(e.cfg.ClaimDelay)):
		return ReasonClaimDelay
	}
	return ReasonLeader
}

// reasonText is r in words, with the detail the view and state give.
func reasonText(r Reason, v *view, st State) string {
	switch r {
	case ReasonLeader:
		return "leader"
	case ReasonFollowing:
		return "following " + v.leader.ID
	case ReasonNoLeader:
		return "no leader known"
	case ReasonNotJoined:
		return "not joined"
	case ReasonMisconfigured:
		return "misconfigured: " + v.misconfigured
	case ReasonRefused:
		return v.refused
	case ReasonShuttingDown:
		return "shutting down"
	case ReasonWithdrawn:
		return "not a candidate (" + string(v.withdrawn) + ")"
	case ReasonSessionChanged:
		return "session changed"
	case ReasonSuspendedStepDown:
		return "suspended (on_suspend: step-down)"
	case ReasonNoSession:
		return "zookeeper " + string(st)
	case ReasonLeaseExpired:
		return "lease expired"
	case ReasonClaimDelay:
		return "claim delay"
	}
	return "unknown"
}
