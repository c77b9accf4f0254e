package election

// The package reads time only through a clock.Clock (Config.Clock,
// SessionConfig.Clock): the lease, claim_delay, the selector term, retries
// and back-offs; clock.Deadline for each wait that may end early. The one
// exception is a socket deadline (dial.go): an instant the kernel checks
// against its own clock, and go-zookeeper sets its deadlines from package
// time, so a handshake's bound is read from package time too.
