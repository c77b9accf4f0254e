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
// the participants, read the newcomers and count their duplicate ids. A
// failure only delays noticing a newcomer: the next re-check sets the
// watch again.
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
	q.roster.queue = sorted
	q.readNewcomers(sorted)
	q.countDuplicates()
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

// idReadsPerPass bounds the nodes a leader reads per read of the queue: a
// new leader of a large queue catches up over later passes instead of
// reading every node at once (a leader change must not cost a read per
// participant). Small elections are complete in one pass.
const idReadsPerPass = 8

// readNewcomers reads what the roster does not know of the participant
// nodes in sorted, at most idReadsPerPass of them: each one's id and
// session, and once per session when it joined (learn).
func (q *queueRecipe) readNewcomers(sorted []string) {
	budget := idReadsPerPass
	for _, name := range sorted {
		if _, ok := q.roster.ids[name]; ok || budget == 0 {
			continue
		}
		budget--
		if _, _, err := q.learn(name); err != nil {
			break // try the rest at the next read
		}
	}
	q.roster.prune(sorted)
}

// learn returns node name as a candidate, reading into the roster what it
// does not know yet: the node (its id and session: one read per node while
// it exists) and its session's meta node (when it joined: one read per
// session). ok is false when the node is gone or is not a participant.
func (q *queueRecipe) learn(name string) (c candidate, ok bool, err error) {
	m := &q.roster
	id, known := m.ids[name]
	sid := m.sessions[name]
	if !known {
		data, stat, err := q.h.get(nodePath(q.cfg.Path, name))
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return candidate{}, false, nil
		case err != nil:
			return candidate{}, false, err
		case q.notEphemeral(name, stat):
			return candidate{}, false, nil
		}
		id, sid = string(data), stat.EphemeralOwner
		m.ids[name], m.sessions[name] = id, sid
	}
	joined, known := m.joined[sid]
	if !known {
		exists, stat, err := q.h.exists(metaNode(q.cfg.Path, sid))
		if err != nil {
			return candidate{}, false, err
		}
		if exists {
			joined = stat.Czxid
		}
		m.joined[sid] = joined
	}
	return candidate{node: name, id: id, session: sid, joined: joined}, true, nil
}

// countDuplicates logs and counts ids that several participant nodes
// carry (as far as readNewcomers has read them). An electd participant
// refuses to join with an id another live one holds (claimID), so these
// are Curator peers, or electd versions older than the claim: reported,
// never refused, as Curator does.
func (q *queueRecipe) countDuplicates() {
	m := &q.roster
	seen := map[string]int{}
	for _, id := range m.ids {
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
			q.log.Warn("duplicate participant id: several participants have it, so /leader is ambiguous to followers",
				"dup_id", id, "nodes", n, "hint", dupHint)
			q.rec.DuplicateID(id)
		}
	}
}
