package proxy

import (
	"sync"
	"time"
)

// fakeLead is a Leadership a test steers: set changes the route and
// announces it; StepDown is recorded and may run a hook (typically a
// hand-over: set the route to another leader).
type fakeLead struct {
	Broadcast
	mu     sync.Mutex
	r      Route
	quiet  bool // set changes the route without announcing it
	steps  []string
	onStep func()
}

func newLead(r Route) *fakeLead { return &fakeLead{r: r} }

func (f *fakeLead) Route() Route {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.r
}

func (f *fakeLead) set(r Route) {
	f.mu.Lock()
	f.r = r
	quiet := f.quiet
	f.mu.Unlock()
	if !quiet {
		f.Notify()
	}
}

func (f *fakeLead) StepDown(reason string) {
	f.mu.Lock()
	f.steps = append(f.steps, reason)
	hook := f.onStep
	f.mu.Unlock()
	if hook != nil {
		go hook()
	}
}

// onStepDown sets what StepDown runs.
func (f *fakeLead) onStepDown(hook func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onStep = hook
}

// hush makes set change the route without announcing it (quiet), or
// announce again.
func (f *fakeLead) hush(quiet bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.quiet = quiet
}

func (f *fakeLead) stepDowns() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.steps)
}

// testElection is the election every fake route takes part in.
const testElection = "/test@0x1"

func leading(id string, token int64) Route {
	return Route{Leading: true, ID: id, Token: token, Election: testElection}
}

func following(id string, token int64, addr string) Route {
	return Route{ID: id, Token: token, Addr: addr, Election: testElection}
}

// fakeRec counts what the proxy records.
type fakeRec struct {
	mu        sync.Mutex
	requests  map[Result]int
	conns     map[Result]int
	forwarded map[int]int
	upstream  map[Target]int
	held      int
	steps     map[string]int
	resent    map[Resend]int
	attempts  map[Target]int
	refused   map[Limit]int
}

func newRec() *fakeRec {
	return &fakeRec{requests: map[Result]int{}, conns: map[Result]int{}, forwarded: map[int]int{}, upstream: map[Target]int{},
		steps: map[string]int{}, resent: map[Resend]int{}, attempts: map[Target]int{}, refused: map[Limit]int{}}
}

func (r *fakeRec) Request(res Result) { r.mu.Lock(); r.requests[res]++; r.mu.Unlock() }
func (r *fakeRec) Conn(res Result)    { r.mu.Lock(); r.conns[res]++; r.mu.Unlock() }
func (r *fakeRec) Forwarded(hop int)  { r.mu.Lock(); r.forwarded[hop]++; r.mu.Unlock() }
func (r *fakeRec) Upstream(to Target, _ time.Duration) {
	r.mu.Lock()
	r.upstream[to]++
	r.mu.Unlock()
}
func (r *fakeRec) Held(time.Duration)     { r.mu.Lock(); r.held++; r.mu.Unlock() }
func (r *fakeRec) SteppedDown(why string) { r.mu.Lock(); r.steps[why]++; r.mu.Unlock() }
func (r *fakeRec) Resent(why Resend)      { r.mu.Lock(); r.resent[why]++; r.mu.Unlock() }
func (r *fakeRec) Attempt(to Target)      { r.mu.Lock(); r.attempts[to]++; r.mu.Unlock() }
func (r *fakeRec) ResendRefused(l Limit)  { r.mu.Lock(); r.refused[l]++; r.mu.Unlock() }
func (r *fakeRec) tries(to Target) int    { r.mu.Lock(); defer r.mu.Unlock(); return r.attempts[to] }
func (r *fakeRec) refusals(l Limit) int   { r.mu.Lock(); defer r.mu.Unlock(); return r.refused[l] }

func (r *fakeRec) request(res Result) int { r.mu.Lock(); defer r.mu.Unlock(); return r.requests[res] }
func (r *fakeRec) conn(res Result) int    { r.mu.Lock(); defer r.mu.Unlock(); return r.conns[res] }
func (r *fakeRec) hops(hop int) int       { r.mu.Lock(); defer r.mu.Unlock(); return r.forwarded[hop] }
func (r *fakeRec) holds() int             { r.mu.Lock(); defer r.mu.Unlock(); return r.held }
func (r *fakeRec) stepDowns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.steps {
		n += v
	}
	return n
}
func (r *fakeRec) resends(why Resend) int { r.mu.Lock(); defer r.mu.Unlock(); return r.resent[why] }
func (r *fakeRec) results() map[Result]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[Result]int{}
	for k, v := range r.requests {
		out[k] = v
	}
	for k, v := range r.conns {
		out["conn:"+k] = v
	}
	return out
}
