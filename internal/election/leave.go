package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/election/zksession"
)

// Leaving the election for good (docs/design/election-and-lease.md, "A queue participant's
// life", step 9): on Resign, on Run's context ending, and on a withdrawal.

// leave deletes everything this participant has in the election, waiting
// for a reconnect when needed (CURATOR-202), until done or ctx ends.
func (e *Elector) leave(ctx context.Context) error {
	l := &e.loop
	sess, cancel := e.s.Subscribe()
	defer cancel()
	if st, sid, _ := e.s.Snapshot(); st == zksession.StateConnected && sid == l.sid && e.r.holding() {
		e.handOff(ctx)
	}
	for {
		st, sid, _ := e.s.Snapshot()
		switch {
		case !e.r.owns():
			// Nothing in the election to delete: the meta node, if any,
			// goes with the session when it is closed.
			return nil
		case st == zksession.StateClosed:
			return nil // ephemerals went with the session
		case st == zksession.StateConnected && sid != l.sid:
			return nil // our nodes belonged to an expired session
		case st == zksession.StateConnected:
			left, err := e.leaveOnce(LossShutdown)
			if left {
				return nil
			}
			if refusedForGood(err) {
				// No retry can change it: the node goes when the session
				// is closed, which the caller does next (docs/design/session-and-faults.md,
				// "Failure semantics").
				return fmt.Errorf("%w: %s of session %s: %w; it goes when the session is closed",
					ErrLeaveRefused, e.r.leftover(), sessionHex(l.sid), err)
			}
		}
		retry, stop := clock.Deadline(e.clock, leaveRetry)
		select {
		case <-sess:
		case <-retry:
		case <-ctx.Done():
			stop()
			return e.leftBehind(ctx.Err())
		}
		stop()
	}
}

// handOff lets a leader leaving for good pick its successor
// (Config.Handoff), once the recipe has heard what its watches said
// already: a join that the leader's children watch reported is then known.
func (e *Elector) handOff(ctx context.Context) {
	for drained := false; !drained; {
		select {
		case ev := <-e.events:
			e.r.handle(ev)
		default:
			drained = true
		}
	}
	e.r.handOff(ctx)
}

// leaveOnce tries to delete the own node, a pending create and the meta node
// once, and reports whether nothing is left, or the error that kept
// something. reason is logged.
func (e *Elector) leaveOnce(reason LossReason) (left bool, err error) {
	l := &e.loop
	if left, err := e.r.leaveOnce(reason); !left {
		return false, err
	}
	if l.metaSID == l.sid && l.metaSID != 0 {
		_ = e.delete(metaNode(e.cfg.Path, l.sid))
		// The id's claim next: a replacement with this id may join at
		// once (docs/design/election-and-lease.md, "Duplicate ids").
		_ = e.delete(idNode(e.cfg.Path, e.cfg.ID))
		l.metaSID = 0
	}
	return true, nil
}

// leftOver handles what a leave could not delete: a refusal for good is
// the caller's to report (Resign's error; closing the session deletes the
// node), anything else is reaped once the connection is back, under the
// same session (CURATOR-202).
func (e *Elector) leftOver(err error, when string) {
	if err == nil || errors.Is(err, ErrLeaveRefused) {
		return
	}
	e.log.Warn("could not delete own node before "+when+"; deleting it once reconnected", "err", err)
	reap(e.s, e.orphansLeft())
}

// leaveRetry paces leave while the connection is down or deletes fail.
const leaveRetry = 100 * time.Millisecond

// leftBehind says what leave could not delete and what happens to it.
func (e *Elector) leftBehind(cause error) error {
	return fmt.Errorf("election: leave: %s of session %s not deleted (zookeeper %s): ZooKeeper removes it when the session expires, within %v: %w",
		e.r.leftover(), sessionHex(e.loop.sid), e.s.State(), e.s.ExpiryBound(), cause)
}

// orphansLeft collects what this elector may still own on the server, for
// the reaper (reaper.go), which runs on the Session's Spawn.
func (e *Elector) orphansLeft() orphans {
	l := &e.loop
	o := e.r.orphans()
	if l.metaSID != 0 && l.metaSID == l.sid {
		o.names = append(o.names, metaNode(e.cfg.Path, l.sid), idNode(e.cfg.Path, e.cfg.ID))
	}
	return o
}
