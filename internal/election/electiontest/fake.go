// Package electiontest has the one fake election of electd's unit tests.
// Each consumer declares the small interface it needs at its seam; Fake
// implements all of them, as *election.Elector does.
package electiontest

import (
	"context"
	"slices"
	"sync"

	"github.com/electd/electd/internal/election"
)

// Method names a method of Fake that can be made to fail (Fail).
type Method string

// The methods Fail can fail.
const (
	Await        Method = "Await"
	Participants Method = "Participants"
	Release      Method = "Release"
	Switchover   Method = "Switchover"
	SetCandidate Method = "SetCandidate"
)

// Fake is an election the test drives: it sets the status and queue,
// queues errors, and reads back the calls. It never changes its own
// status: a test that wants Release to end leadership says so in
// Intercept. It is safe for concurrent use.
//
// Every method but Status and Observe is recorded (Calls), as "await",
// "participants", "release", "switchover <to>", "stand", "withdraw <why>",
// "app up" or "app down". All but SetAppUp are also intercepted
// (Intercept): SetAppUp must not block.
type Fake struct {
	mu        sync.Mutex
	st        election.Status
	parts     []election.Participant
	subs      map[chan election.Status]struct{}
	changed   chan struct{} // closed and replaced at each change
	lost      chan struct{} // closed when the leadership Await saw ends
	stopped   chan struct{} // closed by Stop
	calls     []string
	errs      map[Method][]error
	intercept func(ctx context.Context, call string) error
}

// New returns a Fake whose Status is st.
func New(st election.Status) *Fake {
	f := &Fake{
		subs: map[chan election.Status]struct{}{}, changed: make(chan struct{}),
		stopped: make(chan struct{}), errs: map[Method][]error{},
	}
	f.setLocked(st)
	return f
}

// Set sets the status and sends it to every observer. A slow observer
// sees the latest value, as with the Elector's Observe.
func (f *Fake) Set(st election.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(st)
	for ch := range f.subs {
		offer(ch, st)
	}
}

// SetQuiet sets the status without telling observers, as Drain does.
func (f *Fake) SetQuiet(st election.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(st)
}

func (f *Fake) setLocked(st election.Status) {
	f.st = st
	if !st.IsLeader && f.lost != nil {
		close(f.lost)
		f.lost = nil
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// SetParticipants sets what Participants returns.
func (f *Fake) SetParticipants(ps []election.Participant) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parts = slices.Clone(ps)
}

// Fail makes the next calls of m return errs, one each, in turn.
func (f *Fake) Fail(m Method, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[m] = append(f.errs[m], errs...)
}

// Intercept makes fn run in each intercepted call, with the call's ctx,
// before the call takes effect; fn's error, when not nil, is returned
// instead. fn runs without the Fake's lock, so it may call Set.
func (f *Fake) Intercept(fn func(ctx context.Context, call string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.intercept = fn
}

// Stop ends the election as the end of the Elector's Run does: every
// Observe channel is closed, and Await returns election.ErrClosed.
func (f *Fake) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.isStopped() {
		return
	}
	close(f.stopped)
	for ch := range f.subs {
		close(ch)
	}
	clear(f.subs)
	if f.lost != nil {
		close(f.lost)
		f.lost = nil
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// Calls returns the recorded calls, in order.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Observers returns how many Observe channels are open: an observer
// counts from its Observe call until its ctx ends.
func (f *Fake) Observers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// Unread returns how many observers have not read the latest value yet.
func (f *Fake) Unread() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for ch := range f.subs {
		n += len(ch)
	}
	return n
}

// Status returns what the test set.
func (f *Fake) Status() election.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

// Observe sends the status at once, then each one Set sets, until ctx
// ends or Stop; the channel is then closed.
func (f *Fake) Observe(ctx context.Context) <-chan election.Status {
	ch := make(chan election.Status, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	ch <- f.st
	if f.isStopped() {
		close(ch)
		return ch
	}
	f.subs[ch] = struct{}{}
	go func() {
		select {
		case <-ctx.Done():
		case <-f.stopped: // Stop closed ch
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.subs[ch]; ok {
			delete(f.subs, ch)
			close(ch)
		}
	}()
	return ch
}

// Await blocks until the status says leader, ctx ends or Stop. The
// channel it returns is closed when a later status says not leader.
func (f *Fake) Await(ctx context.Context) (<-chan struct{}, error) {
	if err := f.call(ctx, Await, "await"); err != nil {
		return nil, err
	}
	for {
		f.mu.Lock()
		switch {
		case f.isStopped():
			f.mu.Unlock()
			return nil, election.ErrClosed
		case f.st.IsLeader:
			if f.lost == nil {
				f.lost = make(chan struct{})
			}
			lost := f.lost
			f.mu.Unlock()
			return lost, nil
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Participants returns what SetParticipants set.
func (f *Fake) Participants(ctx context.Context) ([]election.Participant, error) {
	if err := f.call(ctx, Participants, "participants"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.parts), nil
}

// Release records the call and returns its error, if any.
func (f *Fake) Release(ctx context.Context) error {
	return f.call(ctx, Release, "release")
}

// Switchover records the call and returns its error, if any.
func (f *Fake) Switchover(ctx context.Context, to string) error {
	return f.call(ctx, Switchover, "switchover "+to)
}

// SetCandidate records the call and returns its error, if any.
func (f *Fake) SetCandidate(ctx context.Context, candidate bool, why election.LossReason) error {
	if candidate {
		return f.call(ctx, SetCandidate, "stand")
	}
	return f.call(ctx, SetCandidate, "withdraw "+string(why))
}

// SetAppUp records the call.
func (f *Fake) SetAppUp(up bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if up {
		f.calls = append(f.calls, "app up")
	} else {
		f.calls = append(f.calls, "app down")
	}
}

// call records c, runs the interceptor, then returns m's next queued
// error. The error is taken when the call starts, so that calls that
// overlap take them in the order they started.
func (f *Fake) call(ctx context.Context, m Method, c string) error {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	var err error
	if q := f.errs[m]; len(q) > 0 {
		err, f.errs[m] = q[0], q[1:]
	}
	fn := f.intercept
	f.mu.Unlock()
	if fn != nil {
		if ierr := fn(ctx, c); ierr != nil {
			return ierr
		}
	}
	return err
}

func (f *Fake) isStopped() bool {
	select {
	case <-f.stopped:
		return true
	default:
		return false
	}
}

// offer puts st on ch, replacing a value not read yet.
func offer(ch chan election.Status, st election.Status) {
	select {
	case <-ch:
	default:
	}
	ch <- st
}
