package proxy

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/electd/electd/internal/clock"
)

// Re-sends that may repeat work (docs/design/proxy.md, "Retries: a budget, a
// probe, a ramp"): a request that says it may be repeated (ResendSafe) or
// whose body the application never asked for (ResendUnreadBody) may have
// reached the application, so each re-send can run it once more. They are bounded
// per request, spaced by a backoff, and spent from a budget shared by
// the proxy (linkerd2-proxy's retry budget), so that a failing
// application gets at most a fraction more load, never a loop. Re-sends
// that provably reached no application are not counted here: the route's
// probe paces them (probe.go).

// maxResends is how often one request may be sent again after an
// attempt that may have reached the application: 2, so that it runs at
// most 3 times. One covers a connection the application dropped while
// it restarted a worker; a second covers that happening again on the
// next leader after a hand-over. More only multiplies the load on an
// application that drops requests for a reason of its own (HAProxy's
// default is no re-dispatch at all, Envoy's retry policy's is 1).
const maxResends = 2

// Resend backoff: the k-th re-send (k from 0) waits a random time in
// [d/2, d], d = resendFirst·2^k, so that requests dropped together do
// not come back together.
const resendFirst = 25 * time.Millisecond

// The budget, as linkerd2-proxy's defaults: re-sends within a window
// may reach budgetRatio of the requests in it, plus budgetFloor a
// second, so that a quiet proxy may still re-send a few.
const (
	budgetRatio  = 0.2
	budgetFloor  = 10 // a second
	budgetWindow = 10 // seconds
)

// Limit is what kept a request from being sent again; it labels the
// refusals' metric.
type Limit string

const (
	// LimitPerRequest: the request was sent again maxResends times.
	LimitPerRequest Limit = "per_request"
	// LimitBudget: the proxy's re-sends reached their share of requests.
	LimitBudget Limit = "budget"
	// LimitHold: what is left of the hold time is shorter than the backoff.
	LimitHold Limit = "hold_time"
)

// Limits lists the limits, for metric labels.
var Limits = []Limit{LimitPerRequest, LimitBudget, LimitHold}

// resendBackoff is how long the k-th re-send of a request waits.
func resendBackoff(k int, jitter func(n int64) int64) time.Duration {
	d := resendFirst << min(k, 10)
	return d/2 + time.Duration(jitter(int64(d/2)+1))
}

// budget counts requests and re-sends over the last budgetWindow seconds,
// in one slot a second.
type budget struct {
	clock clock.Clock
	mu    sync.Mutex
	slots [budgetWindow]struct {
		sec              int64 // the second the slot counts; older is empty
		requests, resent int
	}
}

// slotLocked is the slot of the current second, emptied if it held an
// older one.
func (b *budget) slotLocked(now int64) int {
	i := int(now % budgetWindow)
	if s := &b.slots[i]; s.sec != now {
		s.sec, s.requests, s.resent = now, 0, 0
	}
	return i
}

// deposit counts one request.
func (b *budget) deposit() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.slots[b.slotLocked(b.now())].requests++
}

// withdraw takes one re-send from the budget; false when none is left.
func (b *budget) withdraw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	cur := b.slotLocked(now)
	requests, resent := 0, 0
	for _, s := range b.slots {
		if now-s.sec < budgetWindow {
			requests, resent = requests+s.requests, resent+s.resent
		}
	}
	if float64(resent+1) > budgetFloor*budgetWindow+budgetRatio*float64(requests) {
		return false
	}
	b.slots[cur].resent++
	return true
}

func (b *budget) now() int64 { return b.clock.Now().Unix() }

// jitter is a random duration in [0, n).
func jitter(n int64) int64 { return rand.Int64N(n) }
