package zksession

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/internal/fielderr"
)

// Limits that Validate enforces.
const (
	// MinSessionTimeout is ZooKeeper's floor of two ticks at the shortest
	// tickTime in use (500 ms); the server would raise anything lower.
	MinSessionTimeout = time.Second
	// DefaultSessionTimeout is Config.SessionTimeout's default, and
	// zookeeper.session_timeout's (internal/config reads it here).
	DefaultSessionTimeout = 10 * time.Second
	// MaxSessionTimeout: the client sends the timeout as int32 milliseconds
	// (wraps at ~596 h: 597 h never connects), and the server negotiates down
	// to its maxSessionTimeout (20 ticks, 40 s by default) anyway. A dead
	// leader's node outlives it by this long, so ten minutes is already far
	// more than any failover wants.
	MaxSessionTimeout = 10 * time.Minute
	// MaxAuthBytes bounds the digest credentials sent on every connect.
	MaxAuthBytes = 4096
)

// ErrSessionClosed: the Session was closed. Test with errors.Is.
var ErrSessionClosed = errors.New("election: session closed")

// Recorder receives counts of what a Session saw. Methods must not block.
type Recorder interface {
	SessionExpired()
	Reconnected()
	// LeaseRenewed reports the round-trip of a sync that renewed the lease.
	LeaseRenewed(rtt time.Duration)
}

// FieldError is what Validate returns (see election.FieldError).
type FieldError = fielderr.Error

func fieldErr(field, format string, args ...any) error {
	return fielderr.Errorf("election", field, format, args...)
}

// validateServer accepts host:port with a host and a port 1-65535, as the
// dialer will use it (surrounding spaces are trimmed there too).
func validateServer(s string) error {
	host, port, err := net.SplitHostPort(strings.TrimSpace(s)) // accepts [::1]:2181
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("%s is not host:port", fielderr.Quote(s))
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("%s has a bad port (want 1-65535)", fielderr.Quote(s))
	}
	return nil
}

func validateAuth(auth string) error {
	switch u, p, ok := strings.Cut(auth, ":"); {
	case auth == "":
		return nil
	case len(auth) > MaxAuthBytes:
		return fmt.Errorf("%d bytes; at most %d", len(auth), MaxAuthBytes)
	case !ok || u == "" || p == "":
		return errors.New("want user:password")
	case !fielderr.Printable(auth):
		return errors.New("has a control character or is not UTF-8")
	}
	return nil
}
