package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// newQueueRecipe is the latch or the selector (cfg.Mode) over h.
func newQueueRecipe(h recipeHost, cfg Config, log *slog.Logger, clk clock.Clock, rec Recorder) *queueRecipe {
	q := &queueRecipe{core: newCore(h, cfg, log, clk, rec), tag: tagFor(cfg.Mode),
		ignored: map[string]string{}, roster: newRoster()}
	q.hooks = coreHooks{resolve: q.resolvePending, forgot: q.forgot}
	return q
}

// step does the next piece of work: adopt a resumed session's node, settle a lost create, observe (not
// standing), join, re-check the queue after a change, read the leader's
// changed queue, end a selector's term. again reports that more may follow.
func (q *queueRecipe) step() (bool, error) {
	if q.adopt {
		return true, q.adoptOwn()
	}
	if q.pending != nil {
		if err := q.resolvePending(); err != nil {
			return false, err
		}
		return true, nil
	}
	if !q.standing {
		err := q.observe()
		return q.dirty && err == nil, err // dirty: the queue changed under the look
	}
	if q.node == "" {
		if q.clock.Now().Before(q.holdOff) {
			return false, nil
		}
		if err := q.join(); err != nil {
			return false, err
		}
		return q.node != "", nil
	}
	if q.dirty {
		if err := q.recheck(); err != nil {
			return false, err
		}
		return q.dirty || q.node == "", nil
	}
	if q.roster.due {
		return true, q.watchMembers()
	}
	if q.termDue {
		return true, q.endTerm()
	}
	return false, nil
}

// handle records what a watch or timer says; the next step acts on it.
func (q *queueRecipe) handle(ev event) {
	if ev.kind == evTerm {
		if ev.node == q.node && ev.node != "" {
			q.termDue = true
		}
		return
	}
	if ev.kind == evMembersDue {
		q.roster.armed = false
		q.roster.due = !q.stale(ev) && q.holding()
		return
	}
	if q.stale(ev) {
		return
	}
	if !q.standing {
		q.dirty = q.dirty || ev.kind == evLeader // observing: look again
		return
	}
	switch ev.kind {
	case evPred, evOwn:
		q.dirty = true
	case evMembers:
		q.membersChanged()
	case evLeader:
		if q.leaderIdx < 0 || q.leaderIdx >= len(q.queue) || ev.node != q.queue[q.leaderIdx] {
			return // a node the walk passed over, not the leader it settled on
		}
		if ev.zk.Type == zk.EventNodeDeleted {
			q.walk()
		} else {
			q.dirty = true
		}
	case evChildren:
		q.termDue = true
	}
}

// recheck reads the queue and decides: lead, or watch the predecessor.
func (q *queueRecipe) recheck() error {
	kids, err := q.h.recheck(q.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		// The path itself is gone (CURATOR-724): recreate it and rejoin.
		q.log.Warn("election path vanished; recreating and rejoining")
		q.h.pathGone()
		q.forget(LossExpired)
		return nil
	}
	if err != nil {
		return fmt.Errorf("re-check: %w", err)
	}
	q.log.Debug("re-checked the queue", "children", len(kids))
	if q.stepDownForeign(kids) {
		return nil
	}
	q.reapOld(kids)
	q.forgetGone(kids)
	sorted := q.queueOf(kids)
	idx := indexOf(sorted, q.node)
	if idx < 0 {
		// Deleted by another client: a switchover moving us behind its
		// target, or an operator.
		q.log.Info("own node was deleted; rejoining at the back", "node", q.node)
		q.forget(LossExpired)
		return nil
	}
	q.h.publish(func(v *view) { v.participants = len(sorted) })
	if idx == 0 {
		err = q.claim()
	} else {
		err = q.follow(sorted, idx)
	}
	if err == nil && q.firstLook && q.node != "" {
		// After the decision, so a newcomer names the leader a read sooner.
		// Every queued participant watches its own node: that is how a
		// switchover moves it behind the target (queue_switchover.go).
		if ok, err := q.armOwn(); !ok {
			return err
		}
		q.firstLook = false
		tok := q.own.stat.Czxid + q.cfg.FencingOffset
		q.h.publish(func(v *view) { v.ownToken = tok })
		q.log.Info("joined", "node", q.node, "session", sessionHex(q.sid), "fencing_token", tok,
			"position", idx, "participants", len(sorted))
	}
	return err
}

// claim takes leadership of the lowest node, once the live session is known
// to own it (armOwn), and watches the path's children (watchMembers).
func (q *queueRecipe) claim() error {
	if ok, err := q.armOwn(); !ok {
		return err
	}
	if q.holding() {
		// A re-check while leading (after a reconnect): verified, so
		// settled. Left dirty, the loop would re-check at once, again and
		// again, until something changed in the queue.
		q.dirty = false
		return q.watchMembers()
	}
	q.gen++ // the follower's watches stop mattering
	q.dirty, q.queue = false, nil
	claimedAt := q.takeLead()
	if q.cfg.Mode == ModeSelector && q.cfg.Term > 0 && q.termNode != q.node {
		q.termNode = q.node
		d := claimedAt.Add(q.cfg.ClaimDelay + q.cfg.Term).Sub(q.clock.Now())
		q.h.after(d, event{kind: evTerm, node: q.node})
	}
	return q.watchMembers()
}

// endTerm ends a selector leader's term: re-queue at the back, unless nobody
// is queued behind us, in which case keep leading (no flap) and watch for the
// first newcomer.
func (q *queueRecipe) endTerm() error {
	if !q.holding() || q.node == "" {
		q.termDue = false
		return nil
	}
	kids, err := q.childrenW(q.cfg.Path, evChildren, q.node)
	if err != nil {
		return fmt.Errorf("term end: %w", err)
	}
	q.termDue = false
	if len(kids) <= 1 {
		return nil
	}
	q.log.Info("term ended; re-queueing", "node", q.node)
	if q.cfg.TermEnd == nil {
		return q.release(LossTerm)
	}
	ctx, cancel := context.WithTimeout(context.Background(), TermEndTimeout)
	defer cancel()
	node, released := q.node, false
	release := func(context.Context) error {
		if released || !q.holdingNode(node) {
			return nil // released already, or the leadership ended meanwhile
		}
		released = true
		return q.release(LossTerm)
	}
	err = q.cfg.TermEnd(ctx, release)
	if !released {
		return release(ctx)
	}
	return err
}
