package proxy

import (
	"sync"
	"time"
)

// Route is where this participant sends traffic now: to its own
// application while it leads, else to the leader's proxy.
type Route struct {
	// Leading is true while this participant leads with a valid lease.
	Leading bool
	// ID and Token are this participant's id and fencing token while it
	// leads, else the leader's as last seen ("" and 0 when none is known).
	ID    string
	Token int64
	// Election names the election this participant takes part in, the
	// same at every participant and different for any other election
	// (election.Status.Election: "<path>@0x<czxid of its node>"); a
	// forward carries it, and a proxy takes only the forwards of its own
	// election. "" until the election has read it. The same path with
	// another czxid is the path created anew, which one side has not read
	// yet: held until the views agree (misdirected.go).
	Election string
	// Addr is the leader's proxy address for its peers (the election's
	// Participant.Proxy). It is empty while this participant leads, when
	// no leader is known, when the leader publishes none (a Curator
	// client, an electd without a proxy), and when the leader known is
	// this participant itself but it does not lead (it is handing over, or
	// its lease lapsed): forwarding to itself would only spend a hop.
	Addr string
	// Lease is, while Leading, how long from the call the lease is certain
	// to last; the proxy looks at Route again then even if Changed has not
	// fired, so a lease that lapses unannounced still closes what this
	// participant holds to its application. 0: unknown.
	Lease time.Duration
}

// Leadership is the narrow view of the election the proxy routes by. The
// daemon adapts the election's Status and Observe to it.
type Leadership interface {
	// Route is computed from memory at call time and checked against the
	// lease then, so a lapsed lease shows at once; it never waits on the
	// network.
	Route() Route
	// Changed returns a channel that is closed at the next change of
	// Route (spurious wake-ups are allowed). Take it before calling Route,
	// so that no change falls between the two. Broadcast implements it.
	Changed() <-chan struct{}
	// StepDown asks the election to give leadership up because the local
	// application refuses connections or answers nothing (docs/design/proxy-app.md,
	// "Forwarding": hand-overs). It
	// must not block: start the hand-over and return. The proxy asks at
	// most once per leadership (fencing token). Wire it through
	// Proxy.Yield, so that requests the application is still answering
	// finish before leadership moves.
	StepDown(reason string)
}

// Broadcast wakes every waiter at once: Changed hands out a channel that
// the next Notify closes. The zero value is ready to use.
type Broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

// Changed returns the channel the next Notify closes.
func (b *Broadcast) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// Notify wakes everyone waiting on a channel from Changed.
func (b *Broadcast) Notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}
