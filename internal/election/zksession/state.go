package zksession

// State is the connection state of a Session.
type State string

const (
	StateConnecting State = "connecting"
	StateConnected  State = "connected"
	StateSuspended  State = "suspended" // disconnected, the session may live
	StateExpired    State = "expired"   // the session is gone; a new one is being made
	StateClosed     State = "closed"
)
