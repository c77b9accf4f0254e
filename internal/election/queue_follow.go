package election

import (
	"errors"
	"fmt"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// A queue follower's two watches: its predecessor, whose going makes it
// re-check whether it leads, and the leader, so that its /leader is current
// without waiting for the queue to drain down to it (docs/design/election-and-lease.md, "A
// queue participant's life", steps 4 and 5). And an observer's one watch.

// follow watches the predecessor (getData, not exists: a watch on a missing
// node would leak) and, separately, the leader, so /leader is current on
// every follower. Leadership is set false before watching (CURATOR-653).
func (q *queueRecipe) follow(sorted []string, idx int) error {
	q.h.publish(func(v *view) {
		if v.holds && v.lossHint == "" {
			v.lossHint = LossReleased
		}
		v.holds = false
	})
	q.gen++
	q.h.wantLease(idx == 1) // next in line: keep a lease ready for the handoff (see setLeader)
	q.queue = sorted[:idx]
	if idx > 1 {
		// The leader first: the view is current one read sooner.
		q.leaderIdx = -1
		q.walk()
	}
	pred := sorted[idx-1]
	data, stat, err := q.getW(nodePath(q.cfg.Path, pred), evPred, pred)
	if errors.Is(err, zk.ErrNoNode) {
		return nil // dirty stays: read the queue again (not recreate: CURATOR-645)
	}
	if err != nil {
		return fmt.Errorf("watch predecessor: %w", err)
	}
	if q.notEphemeral(pred, stat) {
		q.dirty = true // re-check without it
		return nil
	}
	q.dirty = idx > 1 && q.leaderIdx < 0 // the walk found no leader: look again
	if idx == 1 {
		q.leaderIdx = 0
		q.setLeader(pred, data, stat)
	}
	if q.leaderIdx == len(q.queue)-1 {
		// Next in line: verify the own node now, so that taking over is
		// the queue's re-check alone.
		if _, err := q.armOwn(); err != nil {
			return err
		}
	}
	return nil
}

// walk finds the leader after the one we watched vanished: the first node of
// our cached queue that still exists. Nodes created since have higher
// sequence numbers, so none can sort before it. Reads only; the predecessor
// has its own watch, which triggers a real re-check.
func (q *queueRecipe) walk() {
	for i := q.leaderIdx + 1; i < len(q.queue); i++ {
		name := nodePath(q.cfg.Path, q.queue[i])
		if i == len(q.queue)-1 {
			data, stat, err := q.h.get(name)
			if err != nil || q.notEphemeral(q.queue[i], stat) {
				return // gone, unreachable or not a participant: the predecessor watch takes over
			}
			q.leaderIdx = i
			q.setLeader(q.queue[i], data, stat)
			// Next in line now: verify the own node ahead of the
			// handoff, as follow does.
			if _, err := q.armOwn(); err != nil {
				q.dirty = true
			}
			return
		}
		data, stat, err := q.getW(name, evLeader, q.queue[i])
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			q.dirty = true
			return
		}
		if q.notEphemeral(q.queue[i], stat) {
			continue
		}
		q.leaderIdx = i
		q.setLeader(q.queue[i], data, stat)
		return
	}
}

// setLeader records the leader as read from its node. When the leader is
// our predecessor we are next in line and keep a lease ready.
func (q *queueRecipe) setLeader(name string, data []byte, stat *zk.Stat) {
	q.h.wantLease(q.leaderIdx == len(q.queue)-1)
	p := q.participant(name, data, stat)
	p.IsLeader = true
	observed := q.wallNow()
	q.h.publish(func(v *view) {
		v.leader, v.observedAt, v.joined = &p, observed, true
	})
}

// observe keeps the leader view current without standing (SetCandidate):
// the first participant of the queue is watched, or, while there is none,
// the path's children or the path itself. An observer owns no node and
// never writes.
func (q *queueRecipe) observe() error {
	if !q.dirty {
		return nil
	}
	q.gen++
	kids, err := q.h.children(q.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		ok, err := q.existsW(q.cfg.Path, evLeader, "")
		if err != nil {
			return fmt.Errorf("observe: %w", err)
		}
		q.dirty = ok // created meanwhile: look again
		q.observed(nil, 0)
		return nil
	}
	if err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	queue := q.queueOf(kids)
	for _, name := range queue {
		data, stat, err := q.getW(nodePath(q.cfg.Path, name), evLeader, name)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone while we read: the next one leads
		}
		if err != nil {
			return fmt.Errorf("observe: %w", err)
		}
		if q.notEphemeral(name, stat) {
			continue
		}
		q.dirty = false
		p := q.participant(name, data, stat)
		p.IsLeader = true
		q.observed(&p, len(queue))
		return nil
	}
	kids, err = q.childrenW(q.cfg.Path, evLeader, "") // nobody stands: wait for someone
	if err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	// Someone who joined between the two reads fires no watch: look again.
	q.dirty = len(q.queueOf(kids)) > 0
	q.observed(nil, 0)
	return nil
}

// observed records what an observer saw.
func (q *queueRecipe) observed(leader *Participant, n int) {
	q.h.wantLease(false)
	observed := q.wallNow()
	q.h.publish(func(v *view) {
		v.leader, v.participants, v.observedAt, v.joined, v.holds = leader, n, observed, true, false
	})
}
