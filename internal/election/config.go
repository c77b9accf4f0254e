package election

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"
)

// SessionConfig configures a Session.
type SessionConfig struct {
	// Servers are host:port pairs. Names that do not resolve yet are retried
	// and re-resolved; at least one entry is required.
	Servers []string
	// SessionTimeout is the requested timeout; the ensemble negotiates the
	// real one (see Session.Timeout). Default 10s.
	SessionTimeout time.Duration
	// Auth is "user:password" digest credentials, or empty. When set, nodes
	// are created with ACLs that only these credentials may change.
	Auth string
	// FixACL, with Auth set, replaces the ACL of an existing election path
	// (or its meta path) that lets others create or delete there with the
	// Session's own ACL, instead of refusing to stand. Default false.
	FixACL bool
	// RenewInterval is how often the lease is renewed by a sync round-trip.
	// Default: a tenth of the negotiated session timeout.
	RenewInterval time.Duration
	// Logger receives one line per state change. Default: discard.
	Logger *slog.Logger
	// Clock is the lease's time source. Default: RealClock.
	Clock Clock
	// Recorder counts expirations and reconnects. Default: none.
	Recorder SessionRecorder
}

func (c *SessionConfig) setDefaults() {
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = RealClock{}
	}
}

// Validate checks the configuration without connecting.
func (c SessionConfig) Validate() error {
	if len(c.Servers) == 0 {
		return fmt.Errorf("election: zookeeper.servers: at least one host:port is required")
	}
	for _, s := range c.Servers {
		if err := validateServer(s); err != nil {
			return fmt.Errorf("election: zookeeper.servers: %w", err)
		}
	}
	if c.SessionTimeout < 0 {
		return fmt.Errorf("election: zookeeper.session_timeout: must not be negative")
	}
	if c.SessionTimeout != 0 && c.SessionTimeout < time.Second {
		return fmt.Errorf("election: zookeeper.session_timeout: %v is below ZooKeeper's minimum of 2 ticks; use at least 1s", c.SessionTimeout)
	}
	if c.Auth != "" {
		if u, p, ok := strings.Cut(c.Auth, ":"); !ok || u == "" || p == "" {
			return fmt.Errorf("election: zookeeper.auth: want user:password")
		}
	}
	if c.RenewInterval < 0 {
		return fmt.Errorf("election: renew interval must not be negative")
	}
	return nil
}

// Config configures an Elector.
type Config struct {
	// Path is the absolute znode path of the election (chroot already applied).
	Path string
	// Mode is the recipe. Default ModeLatch.
	Mode Mode
	// ID is this participant's id, written as the node's data. Required.
	ID string
	// Advertise is published with the id so followers can find the leader.
	Advertise string
	// Term is the length of one leadership term in selector mode; 0 holds
	// until released. Default 0.
	Term time.Duration
	// OnSuspend is the disconnect policy. Default Hold.
	OnSuspend SuspendPolicy
	// ClaimDelay makes a new leader wait this long before IsLeader turns
	// true. Default 0.
	ClaimDelay time.Duration
	// FencingOffset is added to every fencing token. Default 0.
	FencingOffset int64
	// Logger receives one line per state change. Default: the session's.
	Logger *slog.Logger
	// Clock is the time source for term and claim delay. Default: the session's.
	Clock Clock
	// Recorder counts leadership changes. Default: none.
	Recorder Recorder
}

// Validate checks every field and their relations, with messages that name
// the configuration key.
func (c Config) Validate() error {
	if err := ValidatePath(c.Path); err != nil {
		return fmt.Errorf("election: election.path: %w", err)
	}
	switch c.Mode {
	case "", ModeLatch, ModeSelector, ModeRace:
	default:
		return fmt.Errorf("election: election.mode: %q is not latch, selector or race", c.Mode)
	}
	if c.ID == "" {
		return fmt.Errorf("election: id: must not be empty")
	}
	if c.Term < 0 {
		return fmt.Errorf("election: election.term: must not be negative")
	}
	if c.Term > 0 && c.Mode != ModeSelector {
		return fmt.Errorf("election: election.term: only meaningful in selector mode (mode is %q)", c.modeOrDefault())
	}
	switch c.OnSuspend {
	case "", Hold, StepDown:
	default:
		return fmt.Errorf("election: election.on_suspend: %q is not hold or step-down", c.OnSuspend)
	}
	if c.ClaimDelay < 0 {
		return fmt.Errorf("election: election.claim_delay: must not be negative")
	}
	if c.FencingOffset < 0 {
		return fmt.Errorf("election: election.fencing_offset: must not be negative")
	}
	return nil
}

func (c Config) modeOrDefault() Mode {
	if c.Mode == "" {
		return ModeLatch
	}
	return c.Mode
}

// ValidatePath checks that p is an absolute znode path that can hold an election.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("must not be empty")
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is relative; it must start with /", p)
	case p == "/":
		return fmt.Errorf("the root cannot hold an election")
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%q must not end with /", p)
	case strings.Contains(p, "//"):
		return fmt.Errorf("%q has an empty segment", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("%q has a relative segment %q", p, seg)
		}
		if seg == "zookeeper" && strings.HasPrefix(p, "/zookeeper") {
			return fmt.Errorf("%q is reserved by ZooKeeper", p)
		}
	}
	for _, r := range p {
		if r == 0 || (r > 0 && r < 0x20) || r == 0x7f || (r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return fmt.Errorf("%q has a character ZooKeeper forbids (%U)", p, r)
		}
	}
	return nil
}

func validateServer(s string) error {
	host, port, err := net.SplitHostPort(strings.TrimSpace(s)) // accepts [::1]:2181
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("%q is not host:port", s)
	}
	for _, r := range port {
		if r < '0' || r > '9' {
			return fmt.Errorf("%q has a bad port", s)
		}
	}
	if len(port) > 5 {
		return fmt.Errorf("%q has a bad port", s)
	}
	return nil
}
