package zksession

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
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

// Connect starts connecting and returns at once; the session reconnects
// forever and makes a new ZooKeeper session after expiry.
func Connect(cfg Config) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	s := &Session{
		cfg:   cfg,
		log:   cfg.Logger,
		clock: cfg.Clock,
		state: StateConnecting,
		subs:  map[chan struct{}]struct{}{},
		done:  make(chan struct{}),
	}
	s.authed = cfg.Auth == ""
	servers := make([]string, len(cfg.Servers))
	for i, v := range cfg.Servers {
		servers[i] = strings.TrimSpace(v)
	}
	s.hosts = newHostProvider(s.log)
	var resume Credentials
	if cfg.Resume != nil {
		resume = *cfg.Resume
	}
	conn, _, err := zk.Connect(servers, cfg.SessionTimeout,
		zk.WithHostProvider(s.hosts),
		zk.WithDialer(s.dial),
		zk.WithEventCallback(s.onEvent),
		zk.WithLogger(zkLogger{s.log}),
		zk.WithSession(resume.ID, resume.Password), // id 0: a new session
	)
	if err != nil {
		return nil, fmt.Errorf("election: connect: %w", err)
	}
	s.conn = conn
	if cfg.Auth != "" {
		s.loops.Add(1)
		go s.authLoop()
	}
	s.loops.Add(1)
	go s.renewLoop()
	if cfg.Keeper != nil {
		s.loops.Add(1)
		go s.keepLoop()
	}
	return s, nil
}

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

// Close closes the ZooKeeper session: its ephemeral nodes vanish at once.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		close(s.done) // under mu: see Spawn; and the lease ends here (snapshot)
		s.mu.Unlock()
		s.notify() // before the close reaches the ensemble
		s.conn.Close()
		s.loops.Wait()
		s.mu.Lock()
		s.state = StateClosed
		s.sessionID = 0
		s.leaseEnd, s.lastRenewal = time.Time{}, time.Time{}
		s.mu.Unlock()
		s.notify()
		s.forget()
		s.log.Info("zookeeper session closed")
	})
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

// onEvent runs under go-zookeeper's lock: it must not block or call ZooKeeper.
func (s *Session) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	s.mu.Lock()
	prev, prevID, hadSess := s.state, s.sessionID, s.hadSess
	var resumeTried, resumed bool
	switch ev.State {
	case zk.StateHasSession:
		s.state = StateConnected
		s.dialFailures, s.lastDialWarn = 0, time.Time{}
		s.sessionID = s.negotiatedID.Load()
		resumeTried, resumed = s.resumeOutcomeLocked(s.sessionID)
		if ms := s.negotiatedMs.Load(); ms > 0 {
			s.timeout = time.Duration(ms) * time.Millisecond
		}
		s.hadSess = true
	case zk.StateExpired:
		s.state = StateExpired
		s.sessionID = 0
		s.leaseEnd, s.lastRenewal = time.Time{}, time.Time{}
	case zk.StateDisconnected, zk.StateConnecting, zk.StateConnected:
		switch {
		case s.state == StateExpired:
			// stays expired until the new session arrives
		case s.hadSess:
			s.state = StateSuspended
		default:
			s.state = StateConnecting
		}
	case zk.StateAuthFailed:
		s.log.Error("zookeeper authentication failed", "server", ev.Server)
	}
	cur, curID, timeout := s.state, s.sessionID, s.timeout
	s.mu.Unlock()
	if cur == prev && curID == prevID {
		return
	}
	// A resume ZooKeeper refused is no expiry of a session this process had.
	resuming := s.cfg.Resume != nil && !hadSess
	switch {
	case resumeTried:
		s.logResume(resumed, curID)
	case !(resuming && cur == StateExpired):
		s.logTransition(prev, cur, prevID, curID, timeout, ev.Server)
	}
	if rec := s.cfg.Recorder; rec != nil {
		if cur == StateExpired && prev != StateExpired && !resuming {
			rec.SessionExpired()
		}
		if cur == StateConnected && prev != StateConnected && hadSess {
			rec.Reconnected()
		}
	}
	s.notify()
}

func (s *Session) logTransition(prev, cur State, prevID, curID int64, timeout time.Duration, server string) {
	switch {
	case cur == StateConnected && curID != prevID:
		s.log.Info("zookeeper session established", "session", sessionHex(curID), "timeout", timeout, "server", server)
	case cur == StateConnected:
		s.log.Info("zookeeper reconnected", "session", sessionHex(curID), "server", server)
	case cur == StateSuspended:
		s.log.Warn("zookeeper connection suspended", "session", sessionHex(prevID))
	case cur == StateExpired:
		s.log.Warn("zookeeper session expired", "session", sessionHex(prevID))
	default:
		s.log.Debug("zookeeper state", "from", prev, "to", cur)
	}
}

// authLoop adds the digest credentials once (the previous one too while
// rotating); go-zookeeper then re-sends them on every reconnect. Until all
// succeed the session reports connecting, so nothing is created without them.
func (s *Session) authLoop() {
	defer s.loops.Done()
	ch, cancel := s.Subscribe()
	defer cancel()
	creds := []string{s.cfg.Auth}
	if p := s.cfg.AuthPrevious; p != "" && p != s.cfg.Auth {
		creds = append(creds, p)
	}
	for {
		for len(creds) > 0 && s.State() == StateConnecting && s.conn.State() == zk.StateHasSession {
			if err := s.conn.AddAuth("digest", []byte(creds[0])); err != nil {
				s.log.Warn("zookeeper add auth failed; retrying", "err", err)
				break
			}
			creds = creds[1:]
		}
		if len(creds) == 0 {
			s.mu.Lock()
			s.authed = true
			s.mu.Unlock()
			s.notify()
			return
		}
		retry, stop := clock.Deadline(s.clock, time.Second)
		select {
		case <-s.done:
			return
		case <-ch:
		case <-retry:
		}
		stop()
	}
}

// zkLogger sends go-zookeeper's chatter to the debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zk: " + fmt.Sprintf(format, args...))
}

// sessionHex prints a session id as ZooKeeper does (unsigned hex), as
// meta nodes are named.
func sessionHex(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }
