package election

import "errors"

// Sentinel errors; test with errors.Is.
var (
	ErrNotLeader = errors.New("election: not leader")
	ErrClosed    = errors.New("election: closed")
	// ErrNoQueue: a switchover needs a queue, and race mode has none.
	ErrNoQueue = errors.New("election: race mode has no queue to switch over in")
	// ErrSwitchover: the switchover's target cannot take over (the error
	// wrapping it says why); this participant still leads.
	ErrSwitchover = errors.New("election: switchover refused")
	// ErrLeaveRefused: ZooKeeper refuses for good to delete the own node
	// (no DELETE permission on the election path): a leave ends at once,
	// and the node goes when the Session is closed.
	ErrLeaveRefused = errors.New("election: zookeeper refuses to delete the own node")
)
