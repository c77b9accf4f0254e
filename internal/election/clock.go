package election

// The package reads time only through a clock.Clock (Config.Clock, or
// the Session's): claim_delay, the selector term, retries and back-offs;
// clock.Deadline for each wait that may end early. The lease and the dial's
// socket deadlines are zksession's.
