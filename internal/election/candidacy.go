package election

import (
	"context"
	"errors"
	"fmt"

	"github.com/electd/electd/internal/election/zksession"
)

// errWithdrawPending: withdrawn, but the own node or meta node could not be
// deleted yet; the loop retries.
var errWithdrawPending = errors.New("election: withdrawn; the own node is deleted once ZooKeeper allows")

// command carries out a command other than Resign on Run's goroutine.
func (e *Elector) command(c command) error {
	switch c.kind {
	case cmdCandidate:
		return e.setCandidate(c.ctx, c.candidate, c.why)
	case cmdSwitchover:
		return e.r.switchover(c.ctx, c.to)
	}
	return e.r.release(LossReleased)
}

// setCandidate withdraws or restores candidacy (SetCandidate).
func (e *Elector) setCandidate(ctx context.Context, candidate bool, why LossReason) error {
	l := &e.loop
	led := e.r.holding()
	if candidate {
		if !l.standing {
			l.standing = true
			e.r.stand(true) // the observer's watches stop mattering
			e.publish(func(v *view) { v.standing, v.withdrawn = true, "" })
			e.log.Info("standing in the election again: joining at the back")
		}
		return nil
	}
	if why == "" {
		why = LossWithdrawn
	}
	if l.standing || e.withdrawnWhy() != why {
		l.standing = false
		e.r.stand(false)
		// The application must stop acting before anyone else can start.
		e.publish(func(v *view) {
			v.standing, v.withdrawn = false, why
			if v.holds {
				v.holds, v.lossHint = false, why
			}
		})
		e.log.Info("withdrawing from the election: watching without standing", "reason", string(why))
	}
	st, sid, _ := e.s.Snapshot()
	if st != zksession.StateConnected || sid != l.sid {
		if !e.r.owns() {
			return nil
		}
		return fmt.Errorf("%w (zookeeper %s)", errWithdrawPending, st)
	}
	if led {
		e.handOff(ctx)
	}
	if left, err := e.leaveOnce(why); !left {
		if err != nil {
			return fmt.Errorf("%w: %w", errWithdrawPending, err)
		}
		return errWithdrawPending
	}
	return nil
}

func (e *Elector) withdrawnWhy() LossReason {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.v.withdrawn
}
