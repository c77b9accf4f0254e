package election

import (
	"errors"
	"time"
)

// Mode selects the election recipe (docs/DESIGN.md, "Election modes").
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
// for good (docs/DESIGN.md, "Handoff").
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

// State is the connection state of a Session.
type State string

const (
	StateConnecting State = "connecting"
	StateConnected  State = "connected"
	StateSuspended  State = "suspended" // disconnected, the session may live
	StateExpired    State = "expired"   // the session is gone; a new one is being made
	StateClosed     State = "closed"
)

// LossReason labels why leadership ended.
type LossReason string

const (
	LossReleased  LossReason = "released"
	LossTerm      LossReason = "term"
	LossSuspended LossReason = "suspended"
	LossExpired   LossReason = "expired"
	LossShutdown  LossReason = "shutdown"
	// LossWithdrawn: candidacy withdrawn (SetCandidate), e.g. by an operator.
	LossWithdrawn LossReason = "withdrawn"
	// LossAppUnhealthy: withdrawn because the application failed its checks.
	LossAppUnhealthy LossReason = "app_unhealthy"
)

// Sentinel errors; test with errors.Is.
var (
	ErrNotLeader     = errors.New("election: not leader")
	ErrClosed        = errors.New("election: closed")
	ErrSessionClosed = errors.New("election: session closed")
	// ErrNoQueue: a switchover needs a queue, and race mode has none.
	ErrNoQueue = errors.New("election: race mode has no queue to switch over in")
	// ErrSwitchover: the switchover's target cannot take over (the error
	// wrapping it says why); this participant still leads.
	ErrSwitchover = errors.New("election: switchover refused")
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
	// read, once per session (identity.go).
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

	State          State
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

// Recorder receives counts of what an Elector saw. Methods must not block;
// the metrics package implements it. A nil Recorder records nothing.
type Recorder interface {
	LeadershipAcquired()
	LeadershipLost(reason LossReason)
	LeaderChanged()
	DuplicateID(id string)
}

// SessionRecorder receives counts of what a Session saw. Methods must not block.
type SessionRecorder interface {
	SessionExpired()
	Reconnected()
	// LeaseRenewed reports the round-trip of a sync that renewed the lease.
	LeaseRenewed(rtt time.Duration)
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
