package election

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/electd/electd/internal/clock"

	"github.com/electd/electd/internal/election/zksession"
)

// SessionHandle is what an Elector uses of its Session (*Session in
// production; a fake in the unit tests). It never closes it.
type SessionHandle interface {
	Conn() zksession.Conn
	Config() zksession.Config
	Logger() *slog.Logger
	Clock() clock.Clock
	// Snapshot is the state, session id and lease, read together.
	Snapshot() (zksession.State, int64, time.Duration)
	Subscribe() (<-chan struct{}, func())
	State() zksession.State
	ID() int64
	Timeout() time.Duration
	ExpiryBound() time.Duration
	LeaseRemaining() time.Duration
	Resumed() int64
	NeedLease(want bool)
	Renew() (time.Time, error)
	Spawn(f func()) bool
	Done() <-chan struct{}
}

var _ SessionHandle = (*zksession.Session)(nil)

// zkConn is the seam in front of ZooKeeper the recipes call through.
type zkConn = zksession.Conn

// sessionHex prints a session id as ZooKeeper does (unsigned hex), as
// meta nodes are named.
func sessionHex(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }
