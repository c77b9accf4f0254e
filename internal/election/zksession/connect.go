package zksession

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// A Session's life: Connect, the events go-zookeeper reports, the digest
// credentials added once, and Close.

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
