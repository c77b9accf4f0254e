package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/electd/electd/internal/config"
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
