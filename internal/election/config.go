package election

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/fielderr"
)

// Limits that Validate enforces. A value outside them would pass ZooKeeper's
// checks at start and break at run time; each bound says which way.
const (
	// MinSessionTimeout is ZooKeeper's floor of two ticks at the shortest
	// tickTime in use (500 ms); the server would raise anything lower.
	MinSessionTimeout = time.Second
	// DefaultSessionTimeout is SessionConfig.SessionTimeout's default, and
	// zookeeper.session_timeout's (internal/config reads it here).
	DefaultSessionTimeout = 10 * time.Second
	// MaxSessionTimeout: the client sends the timeout as int32 milliseconds
	// (wraps at ~596 h: 597 h never connects), and the server negotiates down
	// to its maxSessionTimeout (20 ticks, 40 s by default) anyway. A dead
	// leader's node outlives it by this long, so ten minutes is already far
	// more than any failover wants.
	MaxSessionTimeout = 10 * time.Minute
	// MaxFencingOffset keeps token = czxid + offset below 2^63: a czxid is
	// epoch<<32 | counter, and an ensemble reaches epoch 2^30 (czxid 2^62)
	// only after a billion leader elections of its own.
	MaxFencingOffset = 1 << 62
	// MaxIDBytes and MaxAdvertiseBytes bound what every participant writes
	// and every reader of the election reads and serves over HTTP, far below
	// ZooKeeper's 1 MiB packet limit (jute.maxbuffer): past it a client
	// reconnects in a loop. A Kubernetes pod name has at most 253 bytes.
	MaxIDBytes        = 1024
	MaxAdvertiseBytes = 4096
	// MaxPathBytes bounds the election path, chroot included: it is sent in
	// every request and in the watch list replayed on each reconnect.
	MaxPathBytes = 1024
	// MaxAuthBytes bounds the digest credentials sent on every connect.
	MaxAuthBytes = 4096
	// MinTerm: every selector term ends with a hand-over (delete, watch
	// fires, the next participant claims), a few round trips during which
	// nobody leads, and writes to ZooKeeper. A quarter second keeps that
	// under a few percent of the time and four rotations a second (1 ns made
	// three selectors swap 1,335 times in 10 s).
	MinTerm = 250 * time.Millisecond
	// MaxTerm: a week; a longer term is "hold until released" (0).
	MaxTerm = 7 * 24 * time.Hour
	// MaxClaimDelay: a new leader is silent this long after each change;
	// past ten minutes it is a typo for seconds, not a design.
	MaxClaimDelay = 10 * time.Minute
	// TermEndTimeout bounds Config.TermEnd: the election loop waits on it.
	TermEndTimeout = time.Minute
)

// FieldError is what Validate returns: Field names the field of
// SessionConfig or Config that is wrong, Err says how. Test with errors.As;
// a caller that reads the fields from its own configuration keys maps Field
// back to the key.
type FieldError = fielderr.Error

func fieldErr(field, format string, args ...any) error {
	return fielderr.Errorf("election", field, format, args...)
}

// SessionConfig configures a Session.
type SessionConfig struct {
	// Servers are host:port pairs. Names that do not resolve yet are retried
	// and re-resolved; at least one entry is required.
	Servers []string
	// SessionTimeout is the requested timeout, MinSessionTimeout to
	// MaxSessionTimeout; the ensemble negotiates the real one (see
	// Session.Timeout). Default DefaultSessionTimeout (10s).
	SessionTimeout time.Duration
	// Auth is "user:password" digest credentials, or empty. When set, nodes
	// are created with ACLs that only these credentials may change.
	Auth string
	// FixACL, with Auth set, replaces the ACL of an existing election path
	// (or its meta path) that lets others create or delete there with the
	// Session's own ACL (needs ADMIN permission) instead of refusing to
	// stand (checkACL). Default false.
	FixACL bool
	// TLS, when not nil, makes every connection to ZooKeeper TLS with this
	// configuration (ZooKeeper's secureClientPort). An empty ServerName means
	// each server's host name is checked. Default nil: plain TCP.
	TLS *tls.Config
	// RenewInterval is how often the lease is renewed by a sync round-trip.
	// Default: a tenth of the negotiated session timeout.
	RenewInterval time.Duration
	// Logger receives one line per state change. Default: discard.
	Logger *slog.Logger
	// Clock is the lease's time source. Default: clock.Real().
	Clock clock.Clock
	// Recorder counts expirations and reconnects. Default: none.
	Recorder SessionRecorder
}

func (c *SessionConfig) setDefaults() {
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
}

// Validate checks the configuration without connecting. Errors are
// *FieldError; messages never quote Auth.
func (c SessionConfig) Validate() error {
	if len(c.Servers) == 0 {
		return fieldErr("Servers", "required: at least one host:port")
	}
	for _, s := range c.Servers {
		if err := validateServer(s); err != nil {
			return &FieldError{Pkg: "election", Field: "Servers", Err: err}
		}
	}
	if err := inRange(c.SessionTimeout, MinSessionTimeout, MaxSessionTimeout); c.SessionTimeout != 0 && err != nil {
		return &FieldError{Pkg: "election", Field: "SessionTimeout", Err: fmt.Errorf("%w (ZooKeeper's minimum is 2 ticks; the client's maximum is ~596 h, the server's maxSessionTimeout usually 40 s)", err)}
	}
	if err := validateAuth(c.Auth); err != nil {
		return &FieldError{Pkg: "election", Field: "Auth", Err: err}
	}
	if c.RenewInterval < 0 {
		return fieldErr("RenewInterval", "must not be negative")
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
	case !printable(auth):
		return errors.New("has a control character or is not UTF-8")
	}
	return nil
}

// Config configures an Elector.
type Config struct {
	// Path is the absolute znode path of the election (chroot already
	// applied), at most MaxPathBytes.
	Path string
	// Mode is the recipe. Default ModeLatch.
	Mode Mode
	// ID is this participant's id, written as the node's data: required,
	// printable UTF-8 (no control characters), at most MaxIDBytes.
	ID string
	// Advertise is published with the id so followers can find the leader:
	// printable UTF-8, at most MaxAdvertiseBytes. Default empty.
	Advertise string
	// Proxy is the address (host:port) at which this participant's
	// forwarding proxy takes requests from its peers, published in the meta
	// node beside Advertise (docs/DESIGN.md, "Forwarding"): printable
	// UTF-8, at most MaxAdvertiseBytes. Default empty: no proxy.
	Proxy string
	// Term is the length of one leadership term in selector mode: 0 holds
	// until released, else MinTerm to MaxTerm. Default 0.
	Term time.Duration
	// OnSuspend is the disconnect policy. Default Hold.
	OnSuspend SuspendPolicy
	// Handoff says who takes over when a leader leaves the election for
	// good (Resign, or a withdrawal: SetCandidate false). Default
	// HandoffNewest.
	Handoff HandoffPolicy
	// ClaimDelay makes a new leader wait this long, at most MaxClaimDelay,
	// before IsLeader turns true. Default 0.
	ClaimDelay time.Duration
	// FencingOffset, 0 to MaxFencingOffset, is added to every fencing token.
	// Default 0.
	FencingOffset int64
	// Observer starts the participant without standing: it owns no node and
	// never leads, but keeps watching the leader (SetCandidate changes it).
	// Default false: it stands.
	Observer bool
	// TermEnd, when set, wraps the release at the end of a selector's term,
	// the one hand-over the Elector starts on its own: it is called on
	// Run's goroutine with the release, which it calls once, after it has
	// let what the application is doing finish (the forwarding proxy's
	// drain, docs/DESIGN.md "Forwarding"). ctx bounds it (TermEndTimeout);
	// a TermEnd that returns without calling release is released after.
	// The other hand-overs (Release, Switchover, SetCandidate, Resign) are
	// the caller's to wrap. Default nil: release at once.
	TermEnd func(ctx context.Context, release func(context.Context) error) error
	// Logger receives one line per state change. Default: the session's.
	Logger *slog.Logger
	// Clock is the time source for term and claim delay. Default: the session's.
	Clock clock.Clock
	// Recorder counts leadership changes. Default: none.
	Recorder Recorder
}

// Validate checks every field and their relations. Errors are *FieldError.
func (c Config) Validate() error {
	if err := validateElectionPath(c.Path); err != nil {
		return &FieldError{Pkg: "election", Field: "Path", Err: err}
	}
	switch c.Mode {
	case "", ModeLatch, ModeSelector, ModeRace:
	default:
		return fieldErr("Mode", "%s is not latch, selector or race", quote(string(c.Mode)))
	}
	if c.ID == "" {
		return fieldErr("ID", "must not be empty")
	}
	if err := validateText(c.ID, MaxIDBytes); err != nil {
		return &FieldError{Pkg: "election", Field: "ID", Err: err}
	}
	if err := validateText(c.Advertise, MaxAdvertiseBytes); err != nil {
		return &FieldError{Pkg: "election", Field: "Advertise", Err: err}
	}
	if err := validateText(c.Proxy, MaxAdvertiseBytes); err != nil {
		return &FieldError{Pkg: "election", Field: "Proxy", Err: err}
	}
	if err := c.validateTerm(); err != nil {
		return &FieldError{Pkg: "election", Field: "Term", Err: err}
	}
	switch c.OnSuspend {
	case "", Hold, StepDown:
	default:
		return fieldErr("OnSuspend", "%s is not hold or step-down", quote(string(c.OnSuspend)))
	}
	switch c.Handoff {
	case "", HandoffNewest, HandoffNext:
	default:
		return fieldErr("Handoff", "%s is not newest or next", quote(string(c.Handoff)))
	}
	if err := inRange(c.ClaimDelay, 0, MaxClaimDelay); err != nil {
		return &FieldError{Pkg: "election", Field: "ClaimDelay", Err: err}
	}
	if c.FencingOffset < 0 || c.FencingOffset > MaxFencingOffset {
		return fieldErr("FencingOffset", "%d is outside 0 to 2^62 (%d), which keeps czxid + offset below 2^63", c.FencingOffset, int64(MaxFencingOffset))
	}
	return nil
}

func (c Config) validateTerm() error {
	switch {
	case c.Term == 0:
		return nil
	case c.Mode != ModeSelector:
		return fmt.Errorf("only meaningful in selector mode (mode is %s); remove it or set it to 0s", c.modeOrDefault())
	case c.Term < 0:
		return errors.New("must not be negative")
	}
	if err := inRange(c.Term, MinTerm, MaxTerm); err != nil {
		return fmt.Errorf("%w, or 0s to hold until released", err)
	}
	return nil
}

func (c Config) modeOrDefault() Mode {
	if c.Mode == "" {
		return ModeLatch
	}
	return c.Mode
}

func inRange(d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("%v is outside %v to %v", d, lo, hi)
	}
	return nil
}

// validateText accepts printable UTF-8 of at most max bytes: ids and
// advertise data are served raw (/leader?format=text) and logged.
func validateText(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%d bytes; at most %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", quote(s))
	}
	if !printable(s) {
		return fmt.Errorf("%s has a control character", quote(s))
	}
	return nil
}

// printable reports valid UTF-8 without control characters (Unicode Cc:
// NUL, \n, ESC, DEL, C1).
func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// quote shows a value in an error: quoted (control characters escaped) and
// cut at 64 bytes, so that a message stays one short line.
func quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}

func validateElectionPath(p string) error {
	if len(p) > MaxPathBytes {
		return fmt.Errorf("%d bytes; at most %d, chroot included", len(p), MaxPathBytes)
	}
	return ValidatePath(p)
}

// ValidatePath checks that p is an absolute znode path that can hold an election.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("must not be empty")
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%s is relative; it must start with /", quote(p))
	case p == "/":
		return fmt.Errorf("the root cannot hold an election")
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%s must not end with /", quote(p))
	case strings.Contains(p, "//"):
		return fmt.Errorf("%s has an empty segment", quote(p))
	case !utf8.ValidString(p):
		return fmt.Errorf("%s is not valid UTF-8", quote(p))
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("%s has a relative segment %q", quote(p), seg)
		}
		if seg == "zookeeper" && strings.HasPrefix(p, "/zookeeper") {
			return fmt.Errorf("%s is reserved by ZooKeeper", quote(p))
		}
	}
	for _, r := range p {
		if r == 0 || (r > 0 && r < 0x20) || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return fmt.Errorf("%s has a character ZooKeeper forbids (%U)", quote(p), r)
		}
	}
	return nil
}

// validateServer accepts host:port with a host and a port 1-65535, as the
// dialer will use it (surrounding spaces are trimmed there too).
func validateServer(s string) error {
	host, port, err := net.SplitHostPort(strings.TrimSpace(s)) // accepts [::1]:2181
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("%s is not host:port", quote(s))
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("%s has a bad port (want 1-65535)", quote(s))
	}
	return nil
}
