package election

import (
	"errors"
	"fmt"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// A queue follower's two watches: its predecessor, whose going makes it
// re-check whether it leads, and the leader, so that its /leader is current
// without waiting for the queue to drain down to it (docs/DESIGN.md,
// "Election modes").

// follow watches the predecessor (getData, not exists: a watch on a missing
// node would leak) and, separately, the leader, so /leader is current on
// every follower. Leadership is set false before watching (CURATOR-653).
func (q *queueRecipe) follow(sorted []string, idx int) error {
	e, l := q.e, &q.e.loop
	e.updateView(func(v *view) {
		if v.holds && v.lossHint == "" {
			v.lossHint = LossReleased
		}
		v.holds = false
	})
	l.gen++
	e.wantLease(idx == 1) // next in line: keep a lease ready for the handoff (see setLeader)
	q.queue = sorted[:idx]
	if idx > 1 {
		// The leader first: the view is current one read sooner.
		q.leaderIdx = -1
		q.walk()
	}
	pred := sorted[idx-1]
	data, stat, err := e.getW(join(e.cfg.Path, pred), evPred, pred)
	if errors.Is(err, zk.ErrNoNode) {
		return nil // l.dirty stays: read the queue again (not recreate: CURATOR-645)
	}
	if err != nil {
		return fmt.Errorf("watch predecessor: %w", err)
	}
	if q.notEphemeral(pred, stat) {
		l.dirty = true // re-check without it
		return nil
	}
	l.dirty = idx > 1 && q.leaderIdx < 0 // the walk found no leader: look again
	if idx == 1 {
		q.leaderIdx = 0
		q.setLeader(pred, data, stat)
	}
	if q.leaderIdx == len(q.queue)-1 {
		// Next in line: verify the own node now, so that taking over is
		// the queue's re-check alone.
		if _, err := e.armOwn(&q.own); err != nil {
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
	e, l := q.e, &q.e.loop
	for i := q.leaderIdx + 1; i < len(q.queue); i++ {
		name := join(e.cfg.Path, q.queue[i])
		if i == len(q.queue)-1 {
			e.nReads.Add(1)
			data, stat, err := e.zk.Get(name)
			if err != nil || q.notEphemeral(q.queue[i], stat) {
				return // gone, unreachable or not a participant: the predecessor watch takes over
			}
			q.leaderIdx = i
			q.setLeader(q.queue[i], data, stat)
			// Next in line now: verify the own node ahead of the
			// handoff, as follow does.
			if _, err := e.armOwn(&q.own); err != nil {
				l.dirty = true
			}
			return
		}
		data, stat, err := e.getW(name, evLeader, q.queue[i])
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			l.dirty = true
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
	e := q.e
	e.wantLease(q.leaderIdx == len(q.queue)-1)
	p := e.participant(name, data, stat)
	p.IsLeader = true
	e.updateView(func(v *view) {
		v.leader, v.observedAt, v.joined = &p, e.wallNow(), true
	})
}

// observe keeps the leader view current without standing (SetCandidate):
// the first participant of the queue is watched, or, while there is none,
// the path's children or the path itself. An observer owns no node and
// never writes.
func (q *queueRecipe) observe() error {
	e, l := q.e, &q.e.loop
	if !l.dirty {
		return nil
	}
	l.gen++
	e.nReads.Add(1)
	kids, _, err := e.zk.Children(e.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		ok, err := e.existsW(e.cfg.Path, evLeader, "")
		if err != nil {
			return fmt.Errorf("observe: %w", err)
		}
		l.dirty = ok // created meanwhile: look again
		q.observed(nil, 0)
		return nil
	}
	if err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	queue := q.queueOf(kids)
	for _, name := range queue {
		data, stat, err := e.getW(join(e.cfg.Path, name), evLeader, name)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone while we read: the next one leads
		}
		if err != nil {
			return fmt.Errorf("observe: %w", err)
		}
		if q.notEphemeral(name, stat) {
			continue
		}
		l.dirty = false
		p := e.participant(name, data, stat)
		p.IsLeader = true
		q.observed(&p, len(queue))
		return nil
	}
	kids, err = e.childrenW(e.cfg.Path, evLeader, "") // nobody stands: wait for someone
	if err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	// Someone who joined between the two reads fires no watch: look again.
	l.dirty = len(q.queueOf(kids)) > 0
	q.observed(nil, 0)
	return nil
}

// observed records what an observer saw.
func (q *queueRecipe) observed(leader *Participant, n int) {
	e := q.e
	e.wantLease(false)
	e.updateView(func(v *view) {
		v.leader, v.participants, v.observedAt, v.joined, v.holds = leader, n, e.wallNow(), true, false
	})
}
