package election

import (
	"errors"
	"fmt"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// membersDelay gathers the queue changes the leader reads at once: a burst
// of joins (a rollout, a scale-up) costs one read of the children per
// delay, not one per join.
const membersDelay = 100 * time.Millisecond

// membersChanged schedules a read of the children after membersDelay.
func (q *queueRecipe) membersChanged() {
	if q.roster.armed {
		return
	}
	q.roster.armed = true
	q.h.after(membersDelay, event{kind: evMembersDue, gen: q.gen})
}

// watchMembers reads the children with a watch and acts on them: step down
// on another recipe's node, re-check when the own node is not first, count
// the participants and their duplicate ids. A failure only delays noticing
// a newcomer: the next re-check sets the watch again.
func (q *queueRecipe) watchMembers() error {
	q.roster.due, q.roster.armed = false, false
	kids, err := q.childrenW(q.cfg.Path, evMembers, q.node)
	if err != nil {
		q.dirty = true
		return fmt.Errorf("watch members: %w", err)
	}
	if q.stepDownForeign(kids) {
		return nil
	}
	q.reapOld(kids)
	q.forgetGone(kids)
	sorted := q.queueOf(kids)
	if indexOf(sorted, q.node) != 0 {
		q.dirty = true // gone, or not first any more: the re-check decides
		return nil
	}
	q.h.publish(func(v *view) { v.participants = len(sorted) })
	q.countDuplicates(sorted)
	return nil
}

// stepDownForeign steps down and refuses the path when it holds another
// recipe's nodes; it reports whether it did.
func (q *queueRecipe) stepDownForeign(kids []string) bool {
	if len(foreignNodes(q.cfg.Mode, kids)) == 0 {
		return false
	}
	q.deleteNode(q.node)
	q.forget(LossSuspended)
	q.refuseForeign(kids)
	return true
}

// idReadsPerPass bounds the ids a leader reads per read of the queue: a
// new leader of a large queue catches up over later passes instead of
// reading every node at once (a leader change must not cost a read per
// participant). Small elections are complete in one pass.
const idReadsPerPass = 8

// countDuplicates reads the ids of participant nodes not read before (at
// most idReadsPerPass, newest last) and logs and counts ids that several
// nodes carry: allowed (a replacement pod may join before the old one's
// node is gone), but worth an operator's look. Each node is read once while
// it exists.
func (q *queueRecipe) countDuplicates(sorted []string) {
	m := &q.roster
	present := make(map[string]bool, len(sorted))
	budget := idReadsPerPass
	for _, name := range sorted {
		present[name] = true
		if _, ok := m.ids[name]; ok || budget == 0 {
			continue
		}
		budget--
		data, stat, err := q.h.get(nodePath(q.cfg.Path, name))
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue
		case err != nil:
			return // try the rest at the next read
		case q.notEphemeral(name, stat):
			continue
		}
		m.ids[name] = string(data)
	}
	seen := map[string]int{}
	for name, id := range m.ids {
		if !present[name] {
			delete(m.ids, name)
			continue
		}
		seen[id]++
	}
	for id := range m.dups {
		if seen[id] < 2 {
			delete(m.dups, id)
		}
	}
	for id, n := range seen {
		if n > 1 && !m.dups[id] {
			m.dups[id] = true
			q.log.Warn("duplicate participant id", "dup_id", id, "nodes", n)
			q.rec.DuplicateID(id)
		}
	}
}
