package zksession

import (
	"fmt"
	"log/slog"
)

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

// sessionHex prints a session id as ZooKeeper does (unsigned hex), as
// meta nodes are named.
func sessionHex(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }
