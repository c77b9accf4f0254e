package election

import (
	"log/slog"
	"sync"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/election/zksession"
)

// unitLease is how long a renewal on a fakeSession keeps the lease.
const unitLease = 2 * time.Second

// fakeSession is the Session the unit tests run an Elector on: its state,
// session id and lease are set by the test; a renewal is one sync on conn.
// The lease's own rules are zksession's tests; the real-server suites
// prove the two together.
type fakeSession struct {
	cfg   zksession.Config
	conn  zkConn
	log   *slog.Logger
	clock clock.Clock

	mu          sync.Mutex
	state       zksession.State
	authed      bool // unused: the fields mirror zksession.Session's
	hadSess     bool
	sessionID   int64
	timeout     time.Duration
	resumed     int64
	leaseEnd    time.Time
	leaseSID    int64
	leaseDemand int
	subs        map[chan struct{}]struct{}
	done        chan struct{}
}

var _ SessionHandle = (*fakeSession)(nil)

func (s *fakeSession) Conn() zksession.Conn     { return s.conn }
func (s *fakeSession) Config() zksession.Config { return s.cfg }
func (s *fakeSession) Logger() *slog.Logger     { return s.log }
func (s *fakeSession) Clock() clock.Clock       { return s.clock }
func (s *fakeSession) Done() <-chan struct{}    { return s.done }
func (s *fakeSession) ExpiryBound() time.Duration {
	if t := s.Timeout(); t > 0 {
		return t
	}
	return s.cfg.SessionTimeout
}

func (s *fakeSession) Snapshot() (zksession.State, int64, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lease time.Duration
	if (s.state == zksession.StateConnected || s.state == zksession.StateSuspended) && s.leaseSID == s.sessionID && s.sessionID != 0 {
		if d := s.leaseEnd.Sub(s.clock.Now()); d > 0 {
			lease = d
		}
	}
	return s.state, s.sessionID, lease
}

func (s *fakeSession) State() zksession.State        { st, _, _ := s.Snapshot(); return st }
func (s *fakeSession) ID() int64                     { _, sid, _ := s.Snapshot(); return sid }
func (s *fakeSession) LeaseRemaining() time.Duration { _, _, l := s.Snapshot(); return l }

func (s *fakeSession) Timeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.timeout
}

func (s *fakeSession) Resumed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumed
}

func (s *fakeSession) NeedLease(want bool) {
	s.mu.Lock()
	if want {
		s.leaseDemand++
	} else if s.leaseDemand > 0 {
		s.leaseDemand--
	}
	s.mu.Unlock()
	s.notify()
}

// Renew sends one sync; when it succeeds on a connected session the lease
// runs unitLease from its send time.
func (s *fakeSession) Renew() (time.Time, error) {
	sid := s.ID()
	sent := s.clock.Now()
	if _, err := s.conn.Sync("/"); err != nil {
		return sent, err
	}
	s.mu.Lock()
	ok := s.state == zksession.StateConnected && s.sessionID == sid
	if ok {
		s.leaseEnd, s.leaseSID = sent.Add(unitLease), sid
	}
	s.mu.Unlock()
	if ok {
		s.notify()
	}
	return sent, nil
}

func (s *fakeSession) Spawn(f func()) bool {
	go f()
	return true
}

func (s *fakeSession) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}
}

func (s *fakeSession) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
