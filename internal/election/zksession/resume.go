package zksession

import (
	"log/slog"
)

// Resuming a session after a restart (docs/design/session-and-faults.md,
// "Resuming a session after a restart"): ZooKeeper lets a client reconnect
// to a live session with its id and password. A restarted electd that
// does so keeps the session's ephemeral nodes, so it resumes as the same
// participant: its node, its place, its fencing token, its leadership.

// Credentials are a ZooKeeper session's id and password. Whoever holds
// them can take the session over: they are never logged (String and
// LogValue print the id alone).
type Credentials struct {
	ID       int64
	Password []byte
}

func (c Credentials) String() string       { return sessionHex(c.ID) }
func (c Credentials) LogValue() slog.Value { return slog.StringValue(sessionHex(c.ID)) }
func (c Credentials) GoString() string     { return "election.Credentials{" + sessionHex(c.ID) + "}" }
func (c Credentials) valid() bool          { return c.ID != 0 && len(c.Password) > 0 }

// CredentialKeeper stores the credentials of each new session where only a
// restart of the same process's pod finds them (Config.Keeper).
type CredentialKeeper interface {
	// Keep stores c, replacing what was kept.
	Keep(c Credentials) error
	// Forget removes what was kept: the session is closed.
	Forget() error
}

// Resumed is the id of the session this Session resumed (Config.
// Resume), 0 when it resumed none.
func (s *Session) Resumed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumed
}

// resumeOutcomeLocked records, at the first session, whether it is the one
// Config.Resume asked for. Called under mu.
func (s *Session) resumeOutcomeLocked(sid int64) (tried, ok bool) {
	if s.cfg.Resume == nil || s.hadSess {
		return false, false
	}
	if sid == s.cfg.Resume.ID {
		s.resumed = sid
		return true, true
	}
	return true, false
}

// logResume says, once, whether the session asked for was resumed.
func (s *Session) logResume(ok bool, sid int64) {
	old := sessionHex(s.cfg.Resume.ID)
	if ok {
		s.log.Info("zookeeper session resumed", "session", old)
		return
	}
	s.log.Info("zookeeper session not resumed: zookeeper answered that it expired; joining as a new participant",
		"old_session", old, "session", sessionHex(sid))
}

// keepLoop hands each new session's credentials to the keeper.
func (s *Session) keepLoop() {
	defer s.loops.Done()
	ch, cancel := s.Subscribe()
	defer cancel()
	var kept int64
	for {
		if st, sid, _ := s.Snapshot(); st == StateConnected && sid != kept {
			if id, pw := s.conn.Session(); id == sid {
				if err := s.cfg.Keeper.Keep(Credentials{ID: id, Password: pw}); err != nil {
					s.log.Warn("could not keep the zookeeper session for a restart", "session", sessionHex(id), "err", err)
				}
				kept = id
			}
		}
		select {
		case <-s.done:
			return
		case <-ch:
		}
	}
}

// forget removes the kept credentials once the session is closed.
func (s *Session) forget() {
	if s.cfg.Keeper == nil {
		return
	}
	if err := s.cfg.Keeper.Forget(); err != nil {
		s.log.Warn("could not remove the kept zookeeper session", "err", err)
	}
}
