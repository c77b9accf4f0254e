package election

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
