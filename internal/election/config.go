package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/fielderr"
)

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
	// node beside Advertise (docs/design/proxy.md, "Forwarding"): printable
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
	// AppChecked publishes whether this participant's application is up
	// in its meta node (SetAppUp), down until it is first said up: a
	// leader leaving for good hands over to the newest participant whose
	// application is up (docs/design/handover.md, "Handoff"). Default false: not
	// published, and the others count it as up.
	AppChecked bool
	// Observer starts the participant without standing: it owns no node and
	// never leads, but keeps watching the leader (SetCandidate changes it).
	// Default false: it stands.
	Observer bool
	// TermEnd, when set, wraps the release at the end of a selector's term,
	// the one hand-over the Elector starts on its own: it is called on
	// Run's goroutine with the release, which it calls once, after it has
	// let what the application is doing finish (the forwarding proxy's
	// drain, docs/design/proxy.md "Forwarding"). ctx bounds it (TermEndTimeout);
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

// Validate checks every field and their relations. It returns every wrong
// field, each a *FieldError, joined (errors.Join).
func (c Config) Validate() error {
	var errs []error
	field := func(name string, err error) {
		if err != nil {
			errs = append(errs, &FieldError{Pkg: "election", Field: name, Err: err})
		}
	}
	field("Path", validateElectionPath(c.Path))
	switch c.Mode {
	case "", ModeLatch, ModeSelector, ModeRace:
	default:
		field("Mode", fmt.Errorf("%s is not latch, selector or race", fielderr.Quote(string(c.Mode))))
	}
	if c.ID == "" {
		field("ID", errors.New("must not be empty"))
	} else {
		field("ID", validateText(c.ID, MaxIDBytes))
	}
	field("Advertise", validateText(c.Advertise, MaxAdvertiseBytes))
	field("Proxy", validateText(c.Proxy, MaxAdvertiseBytes))
	field("Term", c.validateTerm())
	switch c.OnSuspend {
	case "", Hold, StepDown:
	default:
		field("OnSuspend", fmt.Errorf("%s is not hold or step-down", fielderr.Quote(string(c.OnSuspend))))
	}
	switch c.Handoff {
	case "", HandoffNewest, HandoffNext:
	default:
		field("Handoff", fmt.Errorf("%s is not newest or next", fielderr.Quote(string(c.Handoff))))
	}
	field("ClaimDelay", fielderr.InRange(c.ClaimDelay, 0, MaxClaimDelay))
	if c.FencingOffset < 0 || c.FencingOffset > MaxFencingOffset {
		field("FencingOffset", fmt.Errorf("%d is outside 0 to 2^62 (%d), which keeps czxid + offset below 2^63", c.FencingOffset, int64(MaxFencingOffset)))
	}
	return errors.Join(errs...)
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
	if err := fielderr.InRange(c.Term, MinTerm, MaxTerm); err != nil {
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

// setDefaults fills in the fields left zero, with the defaults their
// comments state; log and clk are the Session's.
func (c *Config) fillDefaults(log *slog.Logger, clk clock.Clock) {
	c.Mode = c.modeOrDefault()
	if c.OnSuspend == "" {
		c.OnSuspend = Hold
	}
	if c.Handoff == "" {
		c.Handoff = HandoffNewest
	}
	if c.Logger == nil {
		c.Logger = log
	}
	if c.Clock == nil {
		c.Clock = clk
	}
}
