package election

import (
	"context"
	"errors"
)

// The Elector's verbs: each blocks as its comment says and ends with ctx.

// Run joins the election and campaigns until ctx is cancelled or Resign is
// called, rejoining after session expiry. It returns nil when stopped that
// way, or ErrSessionClosed when the session was closed under it. When ctx is
// cancelled without Resign, it leaves the election itself, trying for at
// most one session timeout. Run may be called once.
func (e *Elector) Run(ctx context.Context) error {
	if !e.started.CompareAndSwap(false, true) {
		return errors.New("election: Run called twice")
	}
	return e.run(ctx)
}

// Observe returns a channel that receives the current Status at once and then
// one Status per change of leader, own leadership or connection state.
// A slow reader sees the latest value (intermediate ones may be skipped).
// The channel is closed when ctx ends or the Elector stops.
func (e *Elector) Observe(ctx context.Context) <-chan Status {
	ch := make(chan Status, 1)
	e.mu.Lock()
	select {
	case <-e.done:
		e.mu.Unlock()
		ch <- e.Status()
		close(ch)
		return ch
	default:
	}
	e.subs[ch] = struct{}{}
	first := e.last
	if !e.pubOn {
		e.mu.Unlock()
		first = e.Status()
		e.mu.Lock()
	}
	offer(ch, first)
	e.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-e.done:
		}
		e.mu.Lock()
		if _, ok := e.subs[ch]; ok {
			delete(e.subs, ch)
			close(ch)
		}
		e.mu.Unlock()
	}()
	return ch
}

// Await blocks until this participant leads or ctx ends. On success it
// returns a channel that is closed when that leadership ends, for any reason.
func (e *Elector) Await(ctx context.Context) (<-chan struct{}, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for st := range e.Observe(ctx) {
		if !st.IsLeader {
			continue
		}
		e.mu.Lock()
		lost := e.lostCh
		e.mu.Unlock()
		if lost != nil {
			return lost, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, ErrClosed
}

// Release gives leadership up now and re-queues at the back (in race mode:
// stays out of the race until another participant has taken the node, or
// briefly when nobody does). It blocks until the own node is deleted or ctx
// ends; ErrNotLeader on a follower.
func (e *Elector) Release(ctx context.Context) error {
	return e.send(ctx, command{kind: cmdRelease})
}

// SetCandidate withdraws this participant from the election (false) or
// makes it stand again (true). Withdrawn, it owns no node and never leads
// but keeps watching the leader, so Status and Observe stay current. A
// withdrawn leader hands over as on release, counted with reason why
// (LossWithdrawn when empty); a follower leaves the queue; standing again
// joins at the back. Status stops saying leader at once; the call blocks
// until the own node is deleted, or returns the error that kept it (it is
// then deleted once ZooKeeper allows), or ctx's.
func (e *Elector) SetCandidate(ctx context.Context, candidate bool, why LossReason) error {
	return e.send(ctx, command{kind: cmdCandidate, candidate: candidate, why: why})
}

// Switchover hands leadership to the participant whose id is to (the first
// in queue order if several carry it): the participants queued ahead of it
// are moved behind it, then this leader releases (docs/design/handover.md,
// "Switchover"). ErrNotLeader on a follower, ErrNoQueue in race mode, an
// error wrapping ErrSwitchover when the target is unknown, not a
// candidate, already the leader, gone, or queued behind a participant that
// cannot re-queue (a Curator peer). It never makes two leaders: this
// participant leads until its own node is deleted, the last step. When ctx
// ends first it returns ctx.Err() and still leads.
func (e *Elector) Switchover(ctx context.Context, to string) error {
	return e.send(ctx, command{kind: cmdSwitchover, to: to})
}

// Drain makes Status report not-leader from now on without touching
// ZooKeeper: the node stays, so nobody else takes over yet. Used to let the
// application stop acting before Resign hands leadership on.
func (e *Elector) Drain() {
	if !e.draining.Swap(true) {
		e.log.Info("draining: answering not-leader until shutdown")
	}
	e.poke()
}

// Resign stops campaigning and deletes the own node, waiting for a create in
// flight and retrying through disconnects until done or ctx ends. When
// ZooKeeper refuses the delete for good (the path's ACL does not let these
// credentials delete), it returns at once an error wrapping
// ErrLeaveRefused: closing the Session then deletes the node. Run returns
// afterwards.
func (e *Elector) Resign(ctx context.Context) error {
	e.Drain()
	err := e.send(ctx, command{kind: cmdResign})
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// SetAppUp says whether this participant's application is up. With
// Config.AppChecked it is published in the session's meta node, which Run
// rewrites at its next step, so that a leader leaving for good can hand
// over to a participant whose application is up (docs/design/handover.md,
// "Handoff"). It never blocks.
func (e *Elector) SetAppUp(up bool) {
	if e.appUp.Swap(up) == up {
		return
	}
	select {
	case e.appKick <- struct{}{}:
	default:
	}
}

// Done is closed when Run has returned.
func (e *Elector) Done() <-chan struct{} { return e.done }

// Counters returns the cumulative ZooKeeper work counts.
func (e *Elector) Counters() Counters {
	return Counters{Rechecks: e.nChecks.Load(), Writes: e.nWrites.Load(), Reads: e.nReads.Load()}
}

// Participants reads the queue from ZooKeeper, in queue order, from the
// caller's goroutine (reads only). Race mode lists the leader, then the
// electd followers in the order they joined (they own no election node: Node
// is empty and FencingToken 0). A path that does not exist has no
// participants. It returns when ctx ends even if ZooKeeper has not answered.
func (e *Elector) Participants(ctx context.Context) ([]Participant, error) {
	type result struct {
		ps  []Participant
		err error
	}
	ch := make(chan result, 1)
	go func() {
		ps, err := e.r.participants(e.zk)
		ch <- result{ps, err}
	}()
	select {
	case r := <-ch:
		return r.ps, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
