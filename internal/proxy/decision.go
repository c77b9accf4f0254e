package proxy

import (
	"context"
	"errors"
	"time"
)

// Where traffic goes now (decide, in proxy.go), and why what was sent
// there may be cut.

var (
	errLeadershipLost = errors.New("proxy: this participant stopped leading")
	errLeaderChanged  = errors.New("proxy: the leader changed")
	errHoldExpired    = errors.New("proxy: no leader within the hold time")
	errBounced        = errors.New("proxy: the leader's proxy does not lead and sent it back unprocessed")
	// errTermEnded: a newer leader is known, and the old one's proxy
	// answered a ping without having taken the forward: it never will.
	errTermEnded = errors.New("proxy: the leader changed before its proxy took the request")
	// errNewerLeader: the leader a forward went to was succeeded by a
	// newer leadership (a greater fencing token), so its lease has ended.
	errNewerLeader = errors.New("proxy: a newer leader is known")
)

// way is where decide sends traffic.
type way int8

const (
	toApp    way = iota // this participant leads
	toLeader            // the leader's proxy
	toWait              // nowhere yet: hold
	toBounce            // forwarded twice to a participant that does not lead: back to the proxy before
	toNone              // shutting down
)

// decision is where to send traffic now, decided under p.mu against a
// Route read then, so that it agrees with the scopes: a leadership that
// ends after this instant cuts what was handed over in it.
type decision struct {
	way   way
	route Route
	scope context.Context // ends with the leadership (toApp) or with this view of the leader (toLeader)
	why   string          // toWait: what it waits for
	busy  bool            // toWait: for one of the application's AppMaxInFlight to end
}

// wait is what a held request waits for: a route change (wake), the
// route's probe (ready), or a time (retry, when not 0); why it waits,
// and whether for the application's room (busy) or after a failed
// attempt (upstream).
type wait struct {
	wake, ready    <-chan struct{}
	retry          time.Duration
	why            string
	busy, upstream bool
}

// scope ends with a leadership (this participant's, or the leader's a
// follower forwards to): what is bound to it is cut when it ends.
type scope struct {
	token  int64
	addr   string
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newScope(r Route) *scope {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &scope{token: r.Token, addr: r.Addr, ctx: ctx, cancel: cancel}
}
