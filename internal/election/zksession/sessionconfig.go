package zksession

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/fielderr"
)

// Config configures a Session.
type Config struct {
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
	// AuthPrevious is the credential Auth replaces, set only while it is
	// rotated: the session authenticates with both, its nodes grant it all
	// but ADMIN, and paths that name it alone get Auth added (internal/election's checkACL).
	// Ignored when equal to Auth. Default "".
	AuthPrevious string
	// FixACL, with Auth set, replaces the ACL of an existing election path
	// (or its meta path) that lets others create or delete there with the
	// Session's own ACL (needs ADMIN permission) instead of refusing to
	// stand (internal/election's checkACL, which reads it here). Default false.
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
	Recorder Recorder
	// Resume, when set, makes the first connection ask for this existing
	// session rather than a new one; a session ZooKeeper has expired is
	// replaced by a new one, as after any expiry. Default nil.
	Resume *Credentials
	// Keeper, when set, is given the credentials of each new session, and
	// told to forget them when the session is closed. Default nil.
	Keeper CredentialKeeper
}

func (c *Config) setDefaults() {
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

// Validate checks the configuration without connecting. It returns every
// wrong field, each a *FieldError, joined (errors.Join); messages never
// quote Auth.
func (c Config) Validate() error {
	var errs []error
	if len(c.Servers) == 0 {
		errs = append(errs, fieldErr("Servers", "required: at least one host:port"))
	}
	for _, s := range c.Servers {
		if err := validateServer(s); err != nil {
			errs = append(errs, &FieldError{Pkg: "election", Field: "Servers", Err: err})
		}
	}
	if err := fielderr.InRange(c.SessionTimeout, MinSessionTimeout, MaxSessionTimeout); c.SessionTimeout != 0 && err != nil {
		errs = append(errs, &FieldError{Pkg: "election", Field: "SessionTimeout", Err: fmt.Errorf("%w (ZooKeeper's minimum is 2 ticks; the client's maximum is ~596 h, the server's maxSessionTimeout usually 40 s)", err)})
	}
	if err := validateAuth(c.Auth); err != nil {
		errs = append(errs, &FieldError{Pkg: "election", Field: "Auth", Err: err})
	}
	if err := validateAuth(c.AuthPrevious); err != nil {
		errs = append(errs, &FieldError{Pkg: "election", Field: "AuthPrevious", Err: err})
	} else if c.AuthPrevious != "" && c.Auth == "" {
		errs = append(errs, fieldErr("AuthPrevious", "set without Auth: the previous credential is accepted only beside the current one while rotating"))
	}
	if c.Resume != nil && !c.Resume.valid() {
		errs = append(errs, fieldErr("Resume", "needs a session id and a password"))
	}
	if c.RenewInterval < 0 {
		errs = append(errs, fieldErr("RenewInterval", "must not be negative"))
	}
	return errors.Join(errs...)
}
