package election

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// switchover hands leadership to the participant with id to: the queue
// recipes' protocol (docs/design/handover.md, "Switchover").
//
// The leader L reads the queue [L, p1, ..., pk, T, ...]. Every queued electd
// participant watches its own node (armOwn at its first re-check), and
// re-queues at the back when that node is deleted, as after a lost node.
// So L deletes p1..pk, in queue order, and then its own node: T's
// predecessor watch fires and T leads. Nobody but the participants ahead of
// T is disturbed (one extra watch each, no herd), and there are never two
// leaders: L leads until its own node is deleted, the last step, and the pi
// only ever re-queue behind T. Before deleting its own node L reads the
// queue again and gives up, still leading, unless T is right behind it.
//
// A participant whose session has no electd meta node (a Curator peer)
// would not re-queue: the switchover is refused if one is ahead of T, as
// when T is unknown or has no node (an observer is no candidate).
func (q *queueRecipe) switchover(ctx context.Context, to string) error {
	if !q.h.leads() {
		return ErrNotLeader
	}
	queue, err := q.readQueue()
	if err != nil {
		return err
	}
	target, ahead, err := q.findTarget(queue, to)
	if err != nil {
		return err
	}
	for _, p := range ahead {
		if !q.isElectd(p) {
			return fmt.Errorf("%w: %s is queued behind %q (node %s), a participant that is not electd (a Curator client?) and cannot be moved behind it",
				ErrSwitchover, to, p.ID, p.Node)
		}
	}
	q.log.Info("switchover: moving the participants ahead of the target behind it", "to", to,
		"target_node", target.Node, "ahead", len(ahead))
	if err := q.moveBehind(ctx, ahead, to); err != nil {
		return err
	}
	// The last look: T must be next, or this leader stays.
	queue, err = q.readQueue()
	if err != nil {
		return err
	}
	if len(queue) < 2 || queue[0] != q.node || queue[1] != target.Node {
		return fmt.Errorf("%w: %s (node %s) is not next in line any more (it left, or its session ended); still the leader",
			ErrSwitchover, to, target.Node)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("election: switchover to %s: %w (still the leader)", to, err)
	}
	return q.release(LossReleased)
}

// moveBehind deletes the nodes of ahead, electd participants queued before
// the one with id to, in queue order: each re-queues at the back, behind it.
func (q *queueRecipe) moveBehind(ctx context.Context, ahead []Participant, to string) error {
	for _, p := range ahead {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("election: switchover to %s: %w (still the leader)", to, err)
		}
		if err := q.h.delete(nodePath(q.cfg.Path, p.Node)); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("%w: could not move %q behind %s: %w (still the leader)", ErrSwitchover, p.ID, to, err)
		}
	}
	return nil
}

// maxHandoffReads bounds the queue a leaving leader considers to find the
// newest participant: a larger queue hands over to the next in line, as
// a leave must not cost a read per participant of a large election.
const maxHandoffReads = 16

// handOff, with HandoffNewest, moves every participant queued before the
// newest one whose application is up behind it, so that it is next when
// this leader's node goes (docs/design/handover.md, "Handoff"). The newest is the
// one whose session joined last (its meta node's czxid): a participant
// that re-queued after a release or a selector's term sits at the back but
// is no newer. Only electd participants re-queue when their node is
// deleted, so those considered are the ones queued before the first
// Curator peer. The leader's roster already knows the queue (unless it
// changed since its last read) and when each session joined: with two
// participants, or when the next in line is the newest, it reads nothing;
// otherwise it reads the application's state of
// the newest ones (their meta nodes) until one is up, looking no further
// back than the next in line, which takes over otherwise. It never lets go
// itself and gives up at the first error: the leave that follows deletes
// the node whatever happened, and then the next in line leads, as with
// HandoffNext.
func (q *queueRecipe) handOff(ctx context.Context) {
	if q.cfg.Handoff != HandoffNewest || q.node == "" {
		return
	}
	queue := q.roster.queue
	if q.roster.armed || q.roster.due {
		// The queue changed since the roster read it (a join in the last
		// 100 ms, as in a rollout): read it now.
		var err error
		if queue, err = q.readQueue(); err != nil {
			return
		}
	}
	if len(queue) < 3 || queue[0] != q.node || len(queue)-1 > maxHandoffReads {
		return // nobody to skip (as the leader knows the queue), not first, or too many
	}
	movable := q.movable(queue[1:])
	down := 0
	for _, i := range newestFirst(movable) {
		if i == 0 {
			if down > 0 {
				q.log.Info("handing leadership to the next in line: no newer participant's application is up",
					"to", movable[0].id, "newer_down", down)
			}
			return // the next in line: it takes over anyway
		}
		if !q.appUp(movable[i]) {
			down++
			continue
		}
		target, ahead := movable[i], make([]Participant, i)
		for j, c := range movable[:i] {
			ahead[j] = Participant{ID: c.id, Node: c.node, Session: c.session}
		}
		q.log.Info("handing leadership to the newest participant whose application is up", "to", target.id,
			"target_node", target.node, "moved_behind", len(ahead))
		if err := q.moveBehind(ctx, ahead, target.id); err != nil {
			q.log.Warn("could not hand leadership to the newest participant; the next in line takes over", "err", err)
		}
		return
	}
}

// movable is the participants of names, in queue order, up to the first
// that cannot be moved (a Curator peer: no meta node) or cannot be read.
func (q *queueRecipe) movable(names []string) []candidate {
	var out []candidate
	for _, name := range names {
		c, ok, err := q.learn(name)
		if err != nil {
			break
		}
		if !ok {
			continue // gone, or not a participant
		}
		if c.joined == 0 {
			break // a Curator peer: it cannot be moved, nor anyone behind it
		}
		out = append(out, c)
	}
	return out
}

// newestFirst is the indices of cs, the session that joined last first.
func newestFirst(cs []candidate) []int {
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return cs[idx[a]].joined > cs[idx[b]].joined })
	return idx
}

// appUp reads whether c's application is up, from its meta node: the one
// read the roster cannot answer, as it changes (Config.AppChecked).
func (q *queueRecipe) appUp(c candidate) bool {
	data, _, err := q.h.get(metaNode(q.cfg.Path, c.session))
	return err == nil && parseMeta(data).appUp()
}

// readQueue reads the queue as re-check does: participant nodes, in order.
func (q *queueRecipe) readQueue() ([]string, error) {
	kids, err := q.h.children(q.cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("election: switchover: read the queue: %w", err)
	}
	return q.queueOf(kids), nil
}

// findTarget reads the queue's nodes in order until the first whose id is
// to; it returns it and the participants between the leader and it.
func (q *queueRecipe) findTarget(queue []string, to string) (Participant, []Participant, error) {
	var ahead []Participant
	for i, name := range queue {
		if i == 0 {
			if name != q.node {
				return Participant{}, nil, fmt.Errorf("%w: the queue changed under the leader; try again", ErrSwitchover)
			}
			continue
		}
		data, stat, err := q.h.get(nodePath(q.cfg.Path, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return Participant{}, nil, fmt.Errorf("election: switchover: read %s: %w", name, err)
		}
		if q.notEphemeral(name, stat) {
			continue
		}
		p := q.participant(name, data, stat)
		if p.ID == to {
			return p, ahead, nil
		}
		ahead = append(ahead, p)
	}
	if to == q.cfg.ID {
		return Participant{}, nil, fmt.Errorf("%w: %s already leads", ErrSwitchover, to)
	}
	// Sorted: the order behind the leader after a switchover is a race
	// between the moved participants' re-queues, and a message that names
	// the same set should read the same.
	ids := make([]string, len(ahead))
	for i, p := range ahead {
		ids[i] = p.ID
	}
	sort.Strings(ids)
	return Participant{}, nil, fmt.Errorf("%w: no candidate with id %q in the queue (candidates: %s)",
		ErrSwitchover, to, strings.Join(ids, ", "))
}

// isElectd reports whether p's session published an electd meta node: only
// electd participants re-queue when their node is deleted.
func (q *queueRecipe) isElectd(p Participant) bool {
	ok, _, err := q.h.exists(metaNode(q.cfg.Path, p.Session))
	return err == nil && ok
}
