package zksession

// Resuming a session after a restart (docs/design/session-and-faults.md,
// "Resuming a session after a restart"): ZooKeeper lets a client reconnect
// to a live session with its id and password. A restarted electd that
// does so keeps the session's ephemeral nodes, so it resumes as the same
// participant: its node, its place, its fencing token, its leadership.

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
