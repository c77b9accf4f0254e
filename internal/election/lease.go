package election

import "time"

// leaseFor returns how long a renewal proves the session alive, counted from
// the renewal's send time. DESIGN.md derives it: the ZooKeeper leader may
// have last heard of this session one renewal interval plus half a tick
// before the renewal (followers forward session activity every tickTime/2),
// and expiry cannot come earlier than timeout after that. tickTime is unknown
// to a client, but the negotiated timeout is at least 2 x tickTime, so half a
// tick is at most timeout/4. A further margin covers clock-rate drift between
// this host and the ZooKeeper leader.
func leaseFor(timeout, renewInterval time.Duration) time.Duration {
	drift := timeout/100 + 5*time.Millisecond
	d := timeout - renewInterval - timeout/4 - drift
	if d < 0 {
		return 0
	}
	return d
}

// defaultRenewInterval renews ten times per session timeout, so that one
// slow round-trip does not let the lease lapse.
func defaultRenewInterval(timeout time.Duration) time.Duration {
	return timeout / 10
}
