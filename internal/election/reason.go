package election

import "github.com/electd/electd/internal/election/zksession"

// reasonText is r in words, with the detail the view and state give.
func reasonText(r Reason, v *view, st zksession.State) string {
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
	case ReasonDuplicateID:
		return v.duplicate
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
