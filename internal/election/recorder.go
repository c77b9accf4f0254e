package election

// Recorder receives counts of what an Elector saw. Methods must not block;
// the metrics package implements it. A nil Recorder records nothing.
type Recorder interface {
	LeadershipAcquired()
	LeadershipLost(reason LossReason)
	LeaderChanged()
	DuplicateID(id string)
}
