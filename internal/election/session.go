package election

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// Session owns one *zk.Conn, its event loop and the lease. An Elector uses a
// Session but never closes it.
//
// The lease is this package's answer to go-zookeeper having no client-side
// expiry timer: a background loop sends a sync (which the ZooKeeper leader
// takes part in, unlike a ping) every RenewInterval, and each reply extends
// the lease from the request's send time on the monotonic clock.
type Session struct {
	cfg   SessionConfig
	conn  *zk.Conn
	log   *slog.Logger
	clock Clock
	acl   []zk.ACL

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
	leaseEnd  time.Time
	leaseSID  int64
	subs      map[chan struct{}]struct{}

	done      chan struct{}
	closeOnce sync.Once
	loops     sync.WaitGroup
}

// Connect starts connecting and returns at once; the session reconnects
// forever and makes a new ZooKeeper session after expiry.
func Connect(cfg SessionConfig) (*Session, error) {
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
		acl:   zk.WorldACL(zk.PermAll),
	}
	if cfg.Auth == "" {
		s.authed = true
	} else {
		user, pass, _ := strings.Cut(cfg.Auth, ":")
		s.acl = append(zk.DigestACL(zk.PermAll, user, pass), zk.WorldACL(zk.PermRead)...)
	}
	servers := make([]string, len(cfg.Servers))
	for i, v := range cfg.Servers {
		servers[i] = strings.TrimSpace(v)
	}
	conn, _, err := zk.Connect(servers, cfg.SessionTimeout,
		zk.WithHostProvider(newHostProvider(s.log)),
		zk.WithDialer(s.dial),
		zk.WithEventCallback(s.onEvent),
		zk.WithLogger(zkLogger{s.log}),
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
	return s, nil
}

// WaitConnected blocks until the session has a live ZooKeeper session or ctx ends.
func (s *Session) WaitConnected(ctx context.Context) error {
	ch, cancel := s.subscribe()
	defer cancel()
	for {
		switch s.State() {
		case StateConnected:
			return nil
		case StateClosed:
			return errSessionClosed
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
	_, _, lease := s.snapshot()
	return lease
}

// snapshot returns state, session id and lease consistently.
func (s *Session) snapshot() (State, int64, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stateLocked()
	var lease time.Duration
	if (st == StateConnected || st == StateSuspended) && s.leaseSID == s.sessionID && s.sessionID != 0 {
		if d := s.leaseEnd.Sub(s.clock.Now()); d > 0 {
			lease = d
		}
	}
	return st, s.sessionID, lease
}

// Done is closed once Close has been called.
func (s *Session) Done() <-chan struct{} { return s.done }

// Close closes the ZooKeeper session: its ephemeral nodes vanish at once.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		close(s.done) // under mu: see reap
		s.mu.Unlock()
		s.conn.Close()
		s.loops.Wait()
		s.mu.Lock()
		s.state = StateClosed
		s.sessionID = 0
		s.leaseEnd = time.Time{}
		s.mu.Unlock()
		s.notify()
		s.log.Info("zookeeper session closed")
	})
}

// subscribe returns a channel that receives a (coalesced) signal after every
// change of state, session or lease.
func (s *Session) subscribe() (<-chan struct{}, func()) {
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
	switch ev.State {
	case zk.StateHasSession:
		s.state = StateConnected
		s.sessionID = s.negotiatedID.Load()
		if ms := s.negotiatedMs.Load(); ms > 0 {
			s.timeout = time.Duration(ms) * time.Millisecond
		}
		s.hadSess = true
	case zk.StateExpired:
		s.state = StateExpired
		s.sessionID = 0
		s.leaseEnd = time.Time{}
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
	s.logTransition(prev, cur, prevID, curID, timeout, ev.Server)
	if rec := s.cfg.Recorder; rec != nil {
		if cur == StateExpired && prev != StateExpired {
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

// authLoop adds the digest credentials once; go-zookeeper then re-sends them
// on every reconnect. Until it succeeds the session reports connecting, so
// nothing is created without them.
func (s *Session) authLoop() {
	defer s.loops.Done()
	ch, cancel := s.subscribe()
	defer cancel()
	for {
		if s.State() == StateConnecting && s.conn.State() == zk.StateHasSession {
			err := s.conn.AddAuth("digest", []byte(s.cfg.Auth))
			if err == nil {
				s.mu.Lock()
				s.authed = true
				s.mu.Unlock()
				s.notify()
				return
			}
			s.log.Warn("zookeeper add auth failed; retrying", "err", err)
		}
		select {
		case <-s.done:
			return
		case <-ch:
		case <-time.After(time.Second):
		}
	}
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
		wait := time.Until(sent.Add(interval))
		if err != nil && wait < 50*time.Millisecond {
			wait = 50 * time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-s.done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// dial wraps the TCP connection to read the negotiated session timeout from
// the ConnectResponse, which go-zookeeper does not expose, and to bound the
// handshake (handshakeTimeout).
func (s *Session) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, s: s, handshakeBy: time.Now().Add(s.handshakeTimeout())}, nil
}

// handshakeTimeout bounds the wait for a server's ConnectResponse, as the
// Java client does (session timeout / number of servers, here at least 1 s).
// go-zookeeper waits 10 × 2/3 of the session timeout: a server that accepts
// connections but does not answer (a long GC pause, a stalled disk) held
// electd for 6.7 session timeouts before it tried the next server.
func (s *Session) handshakeTimeout() time.Duration {
	d := s.cfg.SessionTimeout / time.Duration(max(len(s.cfg.Servers), 1))
	return max(d, time.Second)
}

// sniffConn parses the first frame read from a new connection (the
// ConnectResponse): a 4-byte length, then protocolVersion int32, timeOut
// int32, sessionId int64, ... It is parsed before go-zookeeper announces the
// session, so the callback sees both values. Until then, it caps the
// deadlines go-zookeeper sets at handshakeBy.
type sniffConn struct {
	net.Conn
	s           *Session
	handshakeBy time.Time
	head        []byte
	done        atomic.Bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done.Load() && n > 0 {
		need := 20 - len(c.head)
		if need > n {
			need = n
		}
		c.head = append(c.head, p[:need]...)
		if len(c.head) >= 20 {
			c.s.negotiatedMs.Store(int64(int32(binary.BigEndian.Uint32(c.head[8:12]))))
			c.s.negotiatedID.Store(int64(binary.BigEndian.Uint64(c.head[12:20])))
			c.done.Store(true)
		}
	}
	return n, err
}

// capDeadline is t, or handshakeBy while the handshake lasts and t is later
// (or none).
func (c *sniffConn) capDeadline(t time.Time) time.Time {
	if !c.done.Load() && (t.IsZero() || t.After(c.handshakeBy)) {
		return c.handshakeBy
	}
	return t
}

func (c *sniffConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.capDeadline(t)) }
func (c *sniffConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.capDeadline(t))
}
func (c *sniffConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.capDeadline(t))
}

// zkLogger sends go-zookeeper's chatter to the debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zk: " + fmt.Sprintf(format, args...))
}

// sessionHex prints a session id as ZooKeeper does (unsigned hex).
func sessionHex(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }
