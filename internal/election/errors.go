package election

import "errors"

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
