package zksession

import (
	"fmt"
	"time"

	"github.com/electd/electd/internal/clock"
)

// The lease (docs/design/election-and-lease.md, "The lease"): how long this process is certain
// the ensemble has not expired its session. go-zookeeper has no client-side
// expiry timer and drops ping replies, so the Session renews the lease with
// its own sync round-trips (a sync goes through the ZooKeeper leader, which
// alone expires sessions; a ping is answered by the follower) and times them
// on the monotonic clock.
//
// Only a participant that may lead soon needs a lease: the leader, and the
// successor so that a handoff costs no extra round-trip. Its users say so
// with NeedLease; with no demand the Session sends no syncs, and costs
// ZooKeeper no more than a Curator participant (the client's pings).

// leaseFor returns how long a renewal proves the session alive, counted from
// the renewal's send time. The ZooKeeper leader learns of a session's
// activity from the follower serving it, which reports every tickTime/2; a
// sync's reply may arrive before the report that carries the sync itself,
// so what the leader is sure to have heard of is the activity before it, at
// most gap earlier, reported at most half a tick later. Expiry cannot come
// earlier than timeout after that. tickTime is unknown to a client, but the
// negotiated timeout is at least 2 x tickTime, so half a tick is at most
// timeout/4. A further margin covers clock-rate drift between this host and
// the ZooKeeper leader.
func leaseFor(timeout, gap time.Duration) time.Duration {
	drift := timeout/100 + 5*time.Millisecond
	d := timeout - gap - timeout/4 - drift
	if d < 0 {
		return 0
	}
	return d
}

// activityGap bounds the time between a renewal sent at sent and the
// session's activity before it: the previous successful renewal, or else a
// ping, which the client sends every third of the timeout.
func activityGap(sent, prevRenewal time.Time, timeout time.Duration) time.Duration {
	pings := timeout / 3
	if prevRenewal.IsZero() {
		return pings
	}
	return min(sent.Sub(prevRenewal), pings)
}

// defaultRenewInterval renews ten times per session timeout, so that one
// slow round-trip does not let the lease lapse.
func defaultRenewInterval(timeout time.Duration) time.Duration {
	return timeout / 10
}

// NeedLease adds (want) or removes one user's demand for the lease.
func (s *Session) NeedLease(want bool) {
	s.mu.Lock()
	if want {
		s.leaseDemand++
	} else if s.leaseDemand > 0 {
		s.leaseDemand--
	}
	s.mu.Unlock()
	s.notify()
}

// renewLoop keeps the lease while some user needs it: one sync at a
// time, every RenewInterval.
func (s *Session) renewLoop() {
	defer s.loops.Done()
	ch, cancel := s.Subscribe()
	defer cancel()
	for {
		s.mu.Lock()
		idle := s.stateLocked() != StateConnected || s.leaseDemand == 0
		s.mu.Unlock()
		if idle {
			select {
			case <-s.done:
				return
			case <-ch:
				continue
			}
		}
		sent, err := s.Renew()
		interval := s.renewInterval()
		wait := sent.Add(interval).Sub(s.clock.Now())
		if err != nil && wait < 50*time.Millisecond {
			wait = 50 * time.Millisecond
		}
		next, stop := clock.Deadline(s.clock, wait)
		select {
		case <-s.done:
			stop()
			return
		case <-next:
		}
	}
}

func (s *Session) renewInterval() time.Duration {
	if s.cfg.RenewInterval > 0 {
		return s.cfg.RenewInterval
	}
	return defaultRenewInterval(s.Timeout())
}

// Renew sends one sync and, when it succeeds on the same session, extends
// the lease from its send time. Safe to call from any goroutine.
func (s *Session) Renew() (sent time.Time, err error) {
	s.mu.Lock()
	sid, prev := s.sessionID, s.lastRenewal
	s.mu.Unlock()
	sent = s.clock.Now()
	if _, err = s.conn.Sync("/"); err != nil {
		s.log.Debug("lease renewal failed", "session", sessionHex(sid), "err", err)
		return sent, fmt.Errorf("renew the lease: %w", err)
	}
	rtt := s.clock.Now().Sub(sent)
	s.mu.Lock()
	timeout := s.timeout
	ok := s.sessionID == sid && s.stateLocked() == StateConnected && timeout > 0
	if ok {
		if s.leaseSID != sid {
			// Renewals of an older session prove nothing about this one.
			prev, s.lastRenewal = time.Time{}, time.Time{}
		}
		end := sent.Add(leaseFor(timeout, activityGap(sent, prev, timeout)))
		if s.leaseSID != sid || end.After(s.leaseEnd) {
			s.leaseEnd, s.leaseSID = end, sid
		}
		if sent.After(s.lastRenewal) {
			s.lastRenewal = sent
		}
	}
	s.mu.Unlock()
	if ok {
		if rec := s.cfg.Recorder; rec != nil {
			rec.LeaseRenewed(rtt)
		}
		s.notify()
	}
	return sent, nil
}
