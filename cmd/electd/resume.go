package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/sessionfile"
)

// resumeFrom opens zookeeper.session_file and sets sc to resume the session
// it keeps and to keep each new one there (docs/design/session-and-faults.md,
// "Resuming a session after a restart"). It
// returns the open file, which this process holds locked until it exits,
// or nil. When nothing is offered it says why in one line; the session
// says whether an offered session was resumed.
func resumeFrom(cfg *config.Loaded, sc *zksession.Config, log *slog.Logger) *sessionfile.File {
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
func resumed(sess *zksession.Session, sc zksession.Config, log *slog.Logger) bool {
	if sc.Resume == nil {
		return false
	}
	wait := sc.SessionTimeout
	if wait <= 0 {
		wait = zksession.DefaultSessionTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := sess.WaitConnected(ctx); err != nil {
		log.Warn("no answer from zookeeper on the kept session within the session timeout: the election starts as for a new participant", "err", err)
		return false
	}
	return sess.Resumed() != 0
}

// resumedViewWait bounds how long a resumed electd keeps its API's
// connections queued for its first view. The shipped probes give a
// restart 3 s (docs/design/kubernetes.md, "A crashed electd's ports").
const resumedViewWait = time.Second

// awaitView waits, at most wait, until el's status is settled: a probe
// queued while electd restarted then gets the answer it will keep. A
// resumed leader's answer is 200 once its lease is proved, never before.
func awaitView(ctx context.Context, el *election.Elector, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for st := range el.Observe(ctx) {
		if settled(st) {
			return
		}
	}
}

// settled says whether st is more than a start: joined with a leader
// known, or out for a reason that lasts. The own node leading with its
// lease not yet proved is a start.
func settled(st election.Status) bool {
	switch st.Why {
	case election.ReasonNotJoined, election.ReasonNoLeader, election.ReasonNoSession:
		return false
	}
	return st.IsLeader || st.Leader == nil || st.Leader.Session != st.SessionID
}
