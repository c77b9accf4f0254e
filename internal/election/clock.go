package election

// The package reads time only through a clock.Clock (Config.Clock,
// SessionConfig.Clock): the lease, claim_delay, the selector term, retries
// and back-offs; clock.Deadline for each wait that may end early.
