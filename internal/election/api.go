package election

import (
	"time"

	"github.com/electd/electd/internal/election/zksession"
)

// Mode selects the election recipe (docs/design/election-and-lease.md, "Election modes").
type Mode string

const (
	// ModeLatch is Curator's LeaderLatch: the lowest ephemeral-sequential
	// node leads until it lets go.
	ModeLatch Mode = "latch"
	// ModeSelector is Curator's LeaderSelector with auto-requeue: leadership
	// rotates in queue order at the end of each term.
	ModeSelector Mode = "selector"
	// ModeRace is a non-fair race on one ephemeral node, <path>/leader.
	ModeRace Mode = "race"
)

// SuspendPolicy says what a leader does when its connection drops.
type SuspendPolicy string

const (
	// Hold keeps leadership through a disconnect while the lease lasts.
	Hold SuspendPolicy = "hold"
	// StepDown gives leadership up at once on disconnect (Curator's standard policy).
	StepDown SuspendPolicy = "step-down"
)

// HandoffPolicy says who takes over from a leader that leaves the election
// for good (docs/design/handover.md, "Handoff").
type HandoffPolicy string

const (
	// HandoffNewest hands leadership to the participant that joined last
	// (of those the leader can move the others behind): in a rollout, a
	// participant of the new version, so that the rollout changes the
	// leader once rather than once per old participant.
	HandoffNewest HandoffPolicy = "newest"
	// HandoffNext lets the next in the queue take over, as Curator does.
	HandoffNext HandoffPolicy = "next"
)

// Participant is one node in the election queue.
type Participant struct {
	ID        string // the node's data (UTF-8 id)
	Advertise string // published by electd participants; empty for Curator ones
	Node      string // znode name, e.g. _c_<uuid>-latch-0000000003, or "leader" in race mode
	Session   int64  // ephemeralOwner of the node
	// FencingToken is the node's czxid plus Config.FencingOffset.
	FencingToken int64
	IsLeader     bool
	// Proxy is where the participant's forwarding proxy takes requests
	// from its peers (Config.Proxy); empty for Curator participants,
	// electd ones without a proxy, and race followers.
	Proxy string
}

// Status is a snapshot of what this participant knows, computed from memory
// (never a ZooKeeper round-trip) and checked against the lease at call time.
type Status struct {
	Mode      Mode
	Path      string
	ID        string
	Advertise string
	Proxy     string // Config.Proxy
	Node      string // own node name; empty when not joined
	// Election names this election: the path and the czxid of its node
	// ("/services/web@0x100000002"), the same at every participant; "" until
	// read. The path may be created anew with another czxid once empty: it
	// is read again then (identity.go), and Observe sends the change.
	Election string

	// Candidate is whether this participant stands in the election now
	// (Config.Observer, SetCandidate).
	Candidate bool

	// IsLeader is true only while this participant holds the lowest node,
	// its lease is valid, claim_delay has passed and it is not draining.
	IsLeader bool
	// Why says why IsLeader is what it is; code branches on it.
	Why Reason
	// Reason is Why in a few words for humans, with its detail (the leader
	// followed, the connection state, the misconfiguration).
	Reason string
	// FencingToken is this participant's token while it leads, else 0.
	FencingToken int64
	// LeaseRemaining is how long the session is certainly alive on the ensemble.
	LeaseRemaining time.Duration

	State          zksession.State
	SessionID      int64
	SessionTimeout time.Duration // negotiated; 0 before the first session
	Joined         bool          // own node exists (race: watching the leader node)

	// Leader is the current leader as this participant last saw it, or nil.
	Leader *Participant
	// ObservedAt is the wall-clock time the leader view was last confirmed.
	ObservedAt time.Time
	// Participants counts the nodes at the last read of the queue.
	Participants int
	// Misconfigured is non-empty when the path holds nodes of another mode.
	Misconfigured string
}

// Counters are cumulative counts of an Elector's ZooKeeper work, for tests
// and debugging: they prove the election is herd-free.
type Counters struct {
	// Rechecks counts candidacy re-checks: reads of the queue (getChildren)
	// to decide whether this participant leads.
	Rechecks uint64
	// Writes counts create, delete and setACL requests this Elector sent.
	Writes uint64
	// Reads counts getData/exists requests (watches on predecessor and leader).
	Reads uint64
}

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
	ReasonDuplicateID                     // another live participant has this id: not standing
)
