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

// members is the queue leader's view of the queue. Followers watch only
// their predecessor, so the leader alone watches the path's children: to
// notice a node of another recipe sorting before ours (Curator sorts by its
// own tag; such a path must make us step down as misconfigured), to keep the
// participant count exact, and to read each newcomer's id once and count
// duplicate ids. One watch on one participant: no herd.
type members struct {
	armed bool              // a delayed read is scheduled
	due   bool              // the delay is over: read the children now
	ids   map[string]string // node name -> id, for participant nodes read
	dups  map[string]bool   // ids reported as duplicated, while they are
}

func newMembers() members {
	return members{ids: map[string]string{}, dups: map[string]bool{}}
}

// membersChanged schedules a read of the children after membersDelay.
func (q *queueRecipe) membersChanged() {
	if q.members.armed {
		return
	}
	q.members.armed = true
	q.e.after(membersDelay, event{kind: evMembersDue, gen: q.e.loop.gen})
}

// watchMembers reads the children with a watch and acts on them: step down
// on another recipe's node, re-check when the own node is not first, count
// the participants and their duplicate ids. A failure only delays noticing
// a newcomer: the next re-check sets the watch again.
func (q *queueRecipe) watchMembers() error {
	e, l := q.e, &q.e.loop
	q.members.due, q.members.armed = false, false
	kids, err := e.childrenW(e.cfg.Path, evMembers, l.node)
	if err != nil {
		l.dirty = true
		return fmt.Errorf("watch members: %w", err)
	}
	if q.stepDownForeign(kids) {
		return nil
	}
	e.reapOld(kids)
	q.forgetGone(kids)
	sorted := q.queueOf(kids)
	if indexOf(sorted, l.node) != 0 {
		l.dirty = true // gone, or not first any more: the re-check decides
		return nil
	}
	e.updateView(func(v *view) { v.participants = len(sorted) })
	q.countDuplicates(sorted)
	return nil
}

// stepDownForeign steps down and refuses the path when it holds another
// recipe's nodes; it reports whether it did.
func (q *queueRecipe) stepDownForeign(kids []string) bool {
	e := q.e
	if len(foreignNodes(e.cfg.Mode, kids)) == 0 {
		return false
	}
	e.deleteNode(e.loop.node)
	e.forgetNode(LossSuspended)
	e.refuseForeign(kids)
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
	e, m := q.e, &q.members
	present := make(map[string]bool, len(sorted))
	budget := idReadsPerPass
	for _, name := range sorted {
		present[name] = true
		if _, ok := m.ids[name]; ok || budget == 0 {
			continue
		}
		budget--
		e.nReads.Add(1)
		data, stat, err := e.zk.Get(join(e.cfg.Path, name))
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
			e.log.Warn("duplicate participant id", "dup_id", id, "nodes", n)
			e.rec.DuplicateID(id)
		}
	}
}
