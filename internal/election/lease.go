package election

import "time"

// leaseFor returns how long a renewal proves the session alive, counted from
// the renewal's send time. docs/DESIGN.md ("The lease") derives it: the ZooKeeper leader may
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

// renewLoop keeps the lease: one sync at a time, every RenewInterval.
func (s *Session) renewLoop() {
	defer s.loops.Done()
	ch, cancel := s.subscribe()
	defer cancel()
	for {
		st, sid, _ := s.snapshot()
		if st != StateConnected {
			select {
			case <-s.done:
				return
			case <-ch:
				continue
			}
		}
		sent := s.clock.Now()
		_, err := s.conn.Sync("/")
		timeout := s.Timeout()
		interval := s.cfg.RenewInterval
		if interval == 0 {
			interval = defaultRenewInterval(timeout)
		}
		if err == nil && timeout > 0 {
			s.mu.Lock()
			if s.sessionID == sid && s.stateLocked() == StateConnected {
				if end := sent.Add(leaseFor(timeout, interval)); s.leaseSID != sid || end.After(s.leaseEnd) {
					s.leaseEnd, s.leaseSID = end, sid
				}
			}
			s.mu.Unlock()
			s.notify()
		} else if err != nil {
			s.log.Debug("lease renewal failed", "session", sessionHex(sid), "err", err)
		}
		wait := sent.Add(interval).Sub(s.clock.Now())
		if err != nil && wait < 50*time.Millisecond {
			wait = 50 * time.Millisecond
		}
		next, stop := after(s.clock, wait)
		select {
		case <-s.done:
			stop()
			return
		case <-next:
		}
	}
}
