package election

import (
	"context"
	"errors"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/election/zksession"
)

// send hands a command to Run and waits for its answer.
func (e *Elector) send(ctx context.Context, c command) error {
	c.ctx, c.reply = ctx, make(chan error, 1)
	select {
	case e.cmds <- c:
	case <-e.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-c.reply:
		return err
	case <-e.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is Run's body: settle, then wait for the next reason to step.
func (e *Elector) run(ctx context.Context) error {
	stopPub := make(chan struct{})
	pubSess, cancelPub := e.s.Subscribe()
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		e.publisher(pubSess, stopPub)
	}()
	defer func() {
		e.wantLease(false)
		cancelPub()
		close(e.done)
		close(stopPub)
		<-pubDone
	}()

	sess, cancel := e.s.Subscribe()
	defer cancel()
	for {
		err := e.settle()
		if errors.Is(err, zksession.ErrSessionClosed) {
			e.log.Info("session closed; leaving the election")
			return zksession.ErrSessionClosed
		}
		var retry <-chan struct{}
		stopRetry := func() {}
		if err != nil {
			d := e.nextBackoff(err)
			e.log.Debug("election step failed; retrying", "err", err, "in", d)
			retry, stopRetry = clock.Deadline(e.clock, d)
		} else {
			e.loop.backoff = 0
			holdOff := e.r.holdOffUntil()
			if d := holdOff.Sub(e.clock.Now()); !holdOff.IsZero() && d > 0 {
				retry, stopRetry = clock.Deadline(e.clock, d)
			}
		}
		done, err := e.wait(ctx, sess, retry, err != nil)
		stopRetry()
		if done {
			return err
		}
	}
}

// wait blocks until the loop has a reason to step again: a command, a watch
// or timer event, the retry, or a change of the session. After a failed step
// (failed), only a change of connection state or session id cuts the
// back-off short: the lease renewals that also signal the session must not
// turn a back-off into a retry every renewal interval. done reports that Run
// must return err.
func (e *Elector) wait(ctx context.Context, sess <-chan struct{}, retry <-chan struct{}, failed bool) (done bool, err error) {
	// What the last step saw: a change since then is worth a step at once,
	// even one that happened before this wait began.
	st, sid := e.loop.state, e.loop.sid
	for {
		select {
		case <-ctx.Done():
			lctx, lcancel := context.WithTimeout(context.Background(), e.s.ExpiryBound())
			err := e.leave(lctx)
			lcancel()
			if errors.Is(err, ErrLeaveRefused) {
				e.log.Warn("stopping with the own node in place", "err", err)
			}
			e.leftOver(err, "stopping")
			return true, nil
		case c := <-e.cmds:
			if c.kind == cmdResign {
				err := e.leave(c.ctx)
				e.leftOver(err, "resigning")
				c.reply <- err
				return true, nil
			}
			c.reply <- e.command(c)
			return false, nil
		case ev := <-e.events:
			e.r.handle(ev)
			return false, nil
		case <-e.appKick:
			return false, nil
		case <-sess:
			if nst, nsid, _ := e.s.Snapshot(); failed && nst == st && nsid == sid {
				continue
			}
			return false, nil
		case <-retry:
			return false, nil
		}
	}
}

// Back-off after a failed step: short for a lost connection (the
// reconnect itself wakes the loop), long for a refusal that only an
// operator can fix (permissions), so that it is retried, not hammered.
const (
	minBackoff     = 50 * time.Millisecond
	maxConnBackoff = 2 * time.Second
	maxBackoff     = 30 * time.Second
)

func (e *Elector) nextBackoff(err error) time.Duration {
	if errors.Is(err, errDuplicateID) {
		return dupRetry // nothing failed: the id's holder may leave any time
	}
	limit := maxBackoff
	if isConnErr(err) {
		limit = maxConnBackoff
	}
	b := min(max(e.loop.backoff*2, minBackoff), limit)
	e.loop.backoff = b
	return b
}

// settleSteps bounds one settle: a step that keeps asking for another with
// nothing changing is a defect (a state left dirty), and the cap keeps it
// from taking the loop over.
const settleSteps = 20

// settle steps until there is nothing left to do right now.
func (e *Elector) settle() error {
	for i := 0; i < settleSteps; i++ {
		again, err := e.step()
		if err != nil || !again {
			return err
		}
	}
	e.log.Warn("the election did not settle; stepping again at the next wake-up", "steps", settleSteps)
	return nil
}

// step does the next piece of work; again is true when more may follow.
// The session is the Elector's; the rest is the recipe's.
func (e *Elector) step() (again bool, err error) {
	l := &e.loop
	st, sid, _ := e.s.Snapshot()
	prevState := l.state
	l.state = st
	switch st {
	case zksession.StateClosed:
		return false, zksession.ErrSessionClosed
	case zksession.StateConnected:
	default:
		if st == zksession.StateSuspended && e.cfg.OnSuspend == StepDown && prevState != zksession.StateSuspended {
			// Curator's standard policy: give up now, re-verify on reconnect.
			e.publish(func(v *view) {
				if v.holds {
					v.holds, v.lossHint = false, LossSuspended
				}
			})
			e.r.verify()
		}
		return false, nil
	}
	if prevState != zksession.StateConnected {
		e.r.verify() // re-verify after any reconnect
	}
	if sid != l.sid {
		e.r.newSession(sid, sid == e.s.Resumed())
		l.sid, l.parentsOK = sid, false
		e.ws.reset()
	}
	e.identify()
	if err := e.syncMeta(); err != nil {
		return false, err
	}
	if !l.standing && (e.r.owns() || l.metaSID == l.sid && l.sid != 0) {
		// Withdrawn with something still in the election (the delete
		// failed): delete it now.
		if left, _ := e.leaveOnce(e.withdrawnWhy()); !left {
			return false, errWithdrawPending
		}
	}
	return e.r.step()
}
