package zksession

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// Session owns one *zk.Conn, its event loop and the lease. Its users (the
// Electors) share it; only its owner closes it.
//
// The lease is this package's answer to go-zookeeper having no client-side
// expiry timer: a background loop sends a sync (which the ZooKeeper leader
// takes part in, unlike a ping) every RenewInterval, and each reply extends
// the lease from the request's send time on the monotonic clock.
type Session struct {
	cfg   Config
	conn  Conn // *zk.Conn but in unit tests
	hosts *hostProvider
	log   *slog.Logger
	clock clock.Clock

	// negotiatedMs is read off the wire by the dialer (go-zookeeper keeps the
	// negotiated timeout private) before the session is announced.
	negotiatedMs atomic.Int64
	negotiatedID atomic.Int64

	mu        sync.Mutex
	state     State
	sessionID int64
	timeout   time.Duration
	hadSess   bool // some session existed: later disconnects are "suspended"
	authed    bool
	resumed   int64 // the session resumed (Config.Resume), 0 if none
	leaseEnd  time.Time
	leaseSID  int64
	// lastRenewal is the send time of the last renewal that succeeded on
	// session leaseSID (activityGap); leaseDemand counts the users that
	// need the lease (NeedLease).
	lastRenewal time.Time
	leaseDemand int
	// dialFailures counts failed dials since the last session, the first
	// at dialDownFrom; lastDialWarn is the last warning (dialFailed).
	dialFailures int
	dialDownFrom time.Time
	lastDialWarn time.Time
	subs         map[chan struct{}]struct{}

	done      chan struct{}
	closeOnce sync.Once
	loops     sync.WaitGroup
}

// Conn is the part of *zk.Conn the engine calls: the seam in front of
// ZooKeeper. Production uses *zk.Conn; the unit tests script a fake
// (internal/election's fakezk_test.go) to drive each recipe step and error path in
// milliseconds. The real-server tests remain the proof.
type Conn interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Delete(path string, version int32) error
	Exists(path string) (bool, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	GetACL(path string) ([]zk.ACL, *zk.Stat, error)
	SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error)
	Sync(path string) (string, error)
	AddAuth(scheme string, auth []byte) error
	State() zk.State
	Session() (int64, []byte)
	Close()
}

var _ Conn = (*zk.Conn)(nil)

// What a user takes from its Session: the connection its requests go on,
// the configuration its node ACLs follow, and the log and clock it
// defaults to.
func (s *Session) Conn() Conn           { return s.conn }
func (s *Session) Config() Config       { return s.cfg }
func (s *Session) Logger() *slog.Logger { return s.log }
func (s *Session) Clock() clock.Clock   { return s.clock }

// ExpiryBound is how long the ensemble may keep this session's ephemeral
// nodes after its last contact: the negotiated timeout, or the requested
// one before the first session.
func (s *Session) ExpiryBound() time.Duration {
	if t := s.Timeout(); t > 0 {
		return t
	}
	return s.cfg.SessionTimeout
}

// WaitConnected blocks until the session has a live ZooKeeper session or ctx ends.
func (s *Session) WaitConnected(ctx context.Context) error {
	ch, cancel := s.Subscribe()
	defer cancel()
	for {
		switch s.State() {
		case StateConnected:
			return nil
		case StateClosed:
			return ErrSessionClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// State is the current connection state.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateLocked()
}

func (s *Session) stateLocked() State {
	if s.state == StateConnected && !s.authed {
		return StateConnecting
	}
	return s.state
}

// ID is the current ZooKeeper session id, 0 while there is none.
func (s *Session) ID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
}

// Timeout is the negotiated session timeout, 0 before the first session.
func (s *Session) Timeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.timeout
}

// LeaseRemaining is how long the ensemble certainly keeps this session
// alive, measured on the monotonic clock at call time; 0 when unknown.
func (s *Session) LeaseRemaining() time.Duration {
	_, _, lease := s.Snapshot()
	return lease
}

// Snapshot returns state, session id and lease consistently. A session
// being closed has no lease: its nodes vanish as the close reaches the
// ensemble, before the close returns, and another may lead at once.
func (s *Session) Snapshot() (State, int64, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stateLocked()
	var lease time.Duration
	if (st == StateConnected || st == StateSuspended) && s.leaseSID == s.sessionID && s.sessionID != 0 && !s.closingLocked() {
		if d := s.leaseEnd.Sub(s.clock.Now()); d > 0 {
			lease = d
		}
	}
	return st, s.sessionID, lease
}

// Done is closed once Close has been called.
func (s *Session) Done() <-chan struct{} { return s.done }

// closingLocked reports that Close has been called (done is closed under mu).
func (s *Session) closingLocked() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Subscribe returns a channel that receives a (coalesced) signal after every
// change of state, session or lease.
func (s *Session) Subscribe() (<-chan struct{}, func()) {
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

func (s *Session) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Spawn runs f on a goroutine that Close waits for, and reports false
// (running nothing) once Close has begun. f watches Done to stop.
func (s *Session) Spawn(f func()) bool {
	s.mu.Lock()
	if s.closingLocked() {
		s.mu.Unlock()
		return false
	}
	s.loops.Add(1) // under mu with done open: Close has not begun to Wait
	s.mu.Unlock()
	go func() {
		defer s.loops.Done()
		f()
	}()
	return true
}
