package main

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/sessionfile"
)

// resumeFrom opens zookeeper.session_file and sets sc to resume the session
// it keeps and to keep each new one there (docs/design/session-and-faults.md,
// "Resuming a session after a restart"). It
// returns the open file, which this process holds locked until it exits,
// or nil. When nothing is offered it says why in one line; the session
// says whether an offered session was resumed.
func resumeFrom(cfg *config.Loaded, sc *election.SessionConfig, log *slog.Logger) *sessionfile.File {
	path := cfg.ZooKeeper.SessionFile
	if path == "" {
		log.Debug("zookeeper session not kept for a restart: zookeeper.session_file is empty")
		return nil
	}
	host, _ := os.Hostname()
	ident := sessionfile.Identity{
		PodUID:   os.Getenv("POD_UID"),
		Hostname: host,
		ID:       cfg.ID,
		Path:     cfg.Prepared.Election.Path,
		Servers:  strings.Join(cfg.ZooKeeper.Servers, ","),
	}
	f, c, why, err := sessionfile.Open(path, ident)
	switch {
	case err != nil:
		log.Warn("zookeeper session not resumed, nor kept for a restart", "err", err)
		return nil
	case f == nil:
		log.Info("zookeeper session not resumed, nor kept for a restart: "+string(why), "file", path)
		return nil
	case c == nil:
		log.Info("zookeeper session not resumed: "+string(why), "file", path)
	default:
		sc.Resume = c
	}
	sc.Keeper = f
	return f
}

// resumed reports whether sess resumed the session sc offered. It waits
// for ZooKeeper's answer, at most the session timeout: an offered session
// not resumed by then has expired. The election starts after it, so a
// resumed candidate stands from the start even with app.health_url
// (docs/design/session-and-faults.md, "Resuming a session after a restart").
func resumed(sess *election.Session, sc election.SessionConfig, log *slog.Logger) bool {
	if sc.Resume == nil {
		return false
	}
	wait := sc.SessionTimeout
	if wait <= 0 {
		wait = election.DefaultSessionTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := sess.WaitConnected(ctx); err != nil {
		log.Warn("no answer from zookeeper on the kept session within the session timeout: the election starts as for a new participant", "err", err)
		return false
	}
	return sess.Resumed() != 0
}
