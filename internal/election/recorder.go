package election

import "time"

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
