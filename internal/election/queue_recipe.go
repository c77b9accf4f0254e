package election

import (
	"context"
	"errors"
	"fmt"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// queueRecipe is Curator's LeaderLatch (latch) and LeaderSelector with
// auto-requeue (selector): a protected EPHEMERAL_SEQUENTIAL node per
// participant, the lowest leads, each follower watches its predecessor only
// and, separately, the leader (docs/DESIGN.md, "Election modes").
type queueRecipe struct {
	e   *Elector
	tag string // latchTag or lockTag

	uuid      string   // protected id of the own node
	firstLook bool     // first re-check after a create: check duplicate ids
	queue     []string // sorted queue up to and including our predecessor
	members   members  // the leader's view of the queue (queue_members.go)
	leaderIdx int      // index in queue of the leader we watch
	own       ownNode  // the own node, read and watched (armOwn)
	termDue   bool     // selector: the term ended; re-queue at the next step
	termNode  string   // selector: the node the term timer was armed for

	// ignored holds children that are not participants and never lead,
	// with why: a malformed name, or not ephemeral (no session owns it).
	// Only children that still exist are kept.
	ignored map[string]string
}

func newQueueRecipe(e *Elector) *queueRecipe {
	return &queueRecipe{e: e, tag: tagFor(e.cfg.Mode), ignored: map[string]string{}, members: newMembers()}
}

// queueOf orders kids into the queue (Curator's order, index 0 leads),
// leaving out children that are not participants, reported once each.
func (q *queueRecipe) queueOf(kids []string) []string {
	out := make([]string, 0, len(kids))
	for _, k := range kids {
		switch {
		case !isQueueNode(k, q.tag):
			q.ignore(k, "its name does not end in "+q.tag+"<10-digit sequence>")
		case q.ignored[k] == "":
			out = append(out, k)
		}
	}
	return sortQueue(out, q.tag)
}

// ignore reports a child that is not a participant, once.
func (q *queueRecipe) ignore(name, why string) {
	if q.ignored[name] != "" {
		return
	}
	q.ignored[name] = why
	q.e.log.Warn("ignoring a node that is not a participant: it never leads", "node", name, "why", why)
}

// notEphemeral reports (and ignores from now on) a node no session owns:
// only a participant's ephemeral node may lead.
func (q *queueRecipe) notEphemeral(name string, stat *zk.Stat) bool {
	if stat.EphemeralOwner != 0 {
		return false
	}
	q.ignore(name, "it is not ephemeral: no session owns it")
	return true
}

// forgetGone drops ignored children that no longer exist.
func (q *queueRecipe) forgetGone(kids []string) {
	if len(q.ignored) == 0 {
		return
	}
	present := make(map[string]bool, len(kids))
	for _, k := range kids {
		present[k] = true
	}
	for k := range q.ignored {
		if !present[k] {
			delete(q.ignored, k)
		}
	}
}

func (q *queueRecipe) step() (bool, error) {
	e, l := q.e, &q.e.loop
	if l.pending != nil {
		if err := q.resolvePending(); err != nil {
			return false, err
		}
		return true, nil
	}
	if !l.standing {
		err := q.observe()
		return l.dirty && err == nil, err // dirty: the queue changed under the look
	}
	if l.node == "" {
		if e.clock.Now().Before(l.holdOff) {
			return false, nil
		}
		if err := q.join(); err != nil {
			return false, err
		}
		return l.node != "", nil
	}
	if l.dirty {
		if err := q.recheck(); err != nil {
			return false, err
		}
		return l.dirty || l.node == "", nil
	}
	if q.members.due {
		return true, q.watchMembers()
	}
	if q.termDue {
		return true, q.endTerm()
	}
	return false, nil
}

func (q *queueRecipe) handle(ev event) {
	e, l := q.e, &q.e.loop
	if ev.kind == evTerm {
		if ev.node == l.node && ev.node != "" {
			q.termDue = true
		}
		return
	}
	if ev.kind == evMembersDue {
		q.members.armed = false
		q.members.due = !e.stale(ev) && e.holding(l.node)
		return
	}
	if e.stale(ev) {
		return
	}
	if !l.standing {
		l.dirty = l.dirty || ev.kind == evLeader // observing: look again
		return
	}
	switch ev.kind {
	case evPred, evOwn:
		l.dirty = true
	case evMembers:
		q.membersChanged()
	case evLeader:
		if q.leaderIdx < 0 || q.leaderIdx >= len(q.queue) || ev.node != q.queue[q.leaderIdx] {
			return // a node the walk passed over, not the leader it settled on
		}
		if ev.zk.Type == zk.EventNodeDeleted {
			q.walk()
		} else {
			l.dirty = true
		}
	case evChildren:
		q.termDue = true
	}
}

func (q *queueRecipe) released() {}

func (q *queueRecipe) forget() {
	if q.uuid != "" {
		q.e.loop.old[q.uuid] = true
	}
	q.uuid, q.queue, q.termDue, q.own = "", nil, false, ownNode{}
}

// recheck reads the queue and decides: lead, or watch the predecessor.
func (q *queueRecipe) recheck() error {
	e, l := q.e, &q.e.loop
	e.nChecks.Add(1)
	kids, _, err := e.zk.Children(e.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		// The path itself is gone (CURATOR-724): recreate it and rejoin.
		e.log.Warn("election path vanished; recreating and rejoining")
		l.parentsOK = false
		e.forgetNode(LossExpired)
		return nil
	}
	if err != nil {
		return fmt.Errorf("re-check: %w", err)
	}
	e.log.Debug("re-checked the queue", "children", len(kids))
	if q.stepDownForeign(kids) {
		return nil
	}
	e.reapOld(kids)
	q.forgetGone(kids)
	sorted := q.queueOf(kids)
	idx := indexOf(sorted, l.node)
	if idx < 0 {
		// Deleted by another client: a switchover moving us behind its
		// target, or an operator.
		e.log.Info("own node was deleted; rejoining at the back", "node", l.node)
		e.forgetNode(LossExpired)
		return nil
	}
	e.updateView(func(v *view) { v.participants = len(sorted) })
	if idx == 0 {
		err = q.claim()
	} else {
		err = q.follow(sorted, idx)
	}
	if err == nil && q.firstLook && l.node != "" {
		// After the decision, so a newcomer names the leader a read sooner.
		// Every queued participant watches its own node: that is how a
		// switchover moves it behind the target (switchover.go).
		if ok, err := e.armOwn(&q.own); !ok {
			return err
		}
		q.firstLook = false
		tok := q.own.stat.Czxid + e.cfg.FencingOffset
		e.updateView(func(v *view) { v.ownToken = tok })
		e.log.Info("joined", "node", l.node, "session", sessionHex(l.sid), "fencing_token", tok,
			"position", idx, "participants", len(sorted))
	}
	return err
}

// claim takes leadership of the lowest node, once the live session is known
// to own it (armOwn).
//
// The leader also watches the path's children. Followers watch only their
// predecessor, so without it nobody would notice a node of another recipe
// sorting before ours (Curator sorts by its own tag): such a path must make
// us step down as misconfigured. One watch on one participant: no herd.
// It also keeps the leader's participant count exact.
func (q *queueRecipe) claim() error {
	e, l := q.e, &q.e.loop
	if ok, err := e.armOwn(&q.own); !ok {
		return err
	}
	if e.holding(l.node) {
		// A re-check while leading (after a reconnect): verified, so
		// settled. Left dirty, the loop would re-check at once, again and
		// again, until something changed in the queue.
		l.dirty = false
		return q.watchMembers()
	}
	l.gen++ // the follower's watches stop mattering
	l.dirty, q.queue = false, nil
	claimedAt := e.takeLead(q.own.data, q.own.stat)
	if e.cfg.Mode == ModeSelector && e.cfg.Term > 0 && q.termNode != l.node {
		q.termNode = l.node
		d := claimedAt.Add(e.cfg.ClaimDelay + e.cfg.Term).Sub(e.clock.Now())
		e.after(d, event{kind: evTerm, node: l.node})
	}
	return q.watchMembers()
}

// endTerm ends a selector leader's term: re-queue at the back, unless nobody
// is queued behind us, in which case keep leading (no flap) and watch for the
// first newcomer.
func (q *queueRecipe) endTerm() error {
	e, l := q.e, &q.e.loop
	if !e.holding(l.node) || l.node == "" {
		q.termDue = false
		return nil
	}
	kids, err := e.childrenW(e.cfg.Path, evChildren, l.node)
	if err != nil {
		return fmt.Errorf("term end: %w", err)
	}
	q.termDue = false
	if len(kids) <= 1 {
		return nil
	}
	e.log.Info("term ended; re-queueing", "node", l.node)
	if e.cfg.TermEnd == nil {
		return e.release(LossTerm)
	}
	ctx, cancel := context.WithTimeout(context.Background(), TermEndTimeout)
	defer cancel()
	node, released := l.node, false
	release := func(context.Context) error {
		if released || !e.holding(node) {
			return nil // released already, or the leadership ended meanwhile
		}
		released = true
		return e.release(LossTerm)
	}
	err = e.cfg.TermEnd(ctx, release)
	if !released {
		return release(ctx)
	}
	return err
}

// participants reads the queue, in order. On a path that also holds nodes
// of the other recipe (misconfigured), each recipe's lowest node is marked
// leader: that is who its own Curator clients follow.
func (q *queueRecipe) participants() ([]Participant, error) {
	e := q.e
	kids, _, err := e.zk.Children(e.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		return []Participant{}, nil // CURATOR-436: no path, no leader
	}
	if err != nil {
		return nil, fmt.Errorf("election: list participants: %w", err)
	}
	out := make([]Participant, 0, len(kids))
	led := map[string]bool{}
	for _, name := range sortBySequence(kids) {
		tag := queueTag(name)
		if tag == "" {
			continue // not a participant (see queueOf)
		}
		data, stat, err := e.zk.Get(join(e.cfg.Path, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // CURATOR-358: gone while we read
		}
		if err != nil {
			return nil, fmt.Errorf("election: read participant %s: %w", name, err)
		}
		if stat.EphemeralOwner == 0 {
			continue // not a participant: never leads
		}
		p := e.participant(name, data, stat)
		p.IsLeader = !led[tag]
		led[tag] = true
		out = append(out, p)
	}
	return out, nil
}
