package election

import (
	"errors"
	"fmt"
	"path"

	"github.com/google/uuid"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// A queue participant's join: the protected node created once per join,
// and a create whose reply was lost settled after reconnecting
// (docs/design/election-and-lease.md, "A queue participant's life", steps 1 and 2).

// join creates our protected EPHEMERAL_SEQUENTIAL node, unless the path
// belongs to another mode.
func (q *queueRecipe) join() error {
	if err := q.h.preparePath(); err != nil {
		return err
	}
	if err := q.h.publishMeta(); err != nil {
		return err
	}
	kids, err := q.h.children(q.cfg.Path)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			q.h.pathGone()
		}
		return fmt.Errorf("list %s: %w", q.cfg.Path, err)
	}
	if q.refuseForeign(kids) {
		return nil
	}
	q.peekLeader(kids)
	id := uuid.NewString()
	q.pending = &pendingCreate{uuid: id}
	created, err := q.h.create(nodePath(q.cfg.Path, nodePrefix(q.cfg.Mode, id)), []byte(q.cfg.ID),
		zk.FlagEphemeralSequential)
	if err != nil {
		return q.createFailed(err)
	}
	// "joined" is logged after the first re-check (see recheck), which
	// reads the node's token without delaying the leader view.
	q.uuid, q.firstLook = id, true
	q.haveNode(path.Base(created), 0)
	return nil
}

// peekLeader publishes who leads before our own node exists, so that a
// participant that just started names the leader one read after connecting
// rather than after its create and first re-check. Only when no leader is
// known: the re-check right after the create takes over.
func (q *queueRecipe) peekLeader(kids []string) {
	if q.h.viewed().leader != nil {
		return
	}
	queue := q.queueOf(kids)
	if len(queue) == 0 {
		return
	}
	first := queue[0]
	if data, stat, err := q.h.get(nodePath(q.cfg.Path, first)); err == nil && !q.notEphemeral(first, stat) {
		p := q.participant(first, data, stat)
		p.IsLeader = true
		observed := q.wallNow()
		q.h.publish(func(v *view) { v.leader, v.observedAt = &p, observed }) // not joined yet
	}
}

// resolvePending settles a create whose reply was lost: adopt the node if
// our live session made it, delete it if an older session did (CURATOR-498).
func (q *queueRecipe) resolvePending() error {
	kids, err := q.h.children(q.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		q.pending = nil
		q.h.pathGone()
		return nil
	}
	if err != nil {
		return fmt.Errorf("resolve create: %w", err)
	}
	id := q.pending.uuid
	for _, k := range kids {
		if protectedID(k) != id {
			continue
		}
		ok, stat, err := q.h.exists(nodePath(q.cfg.Path, k))
		if err != nil {
			return fmt.Errorf("resolve create: %w", err)
		}
		if ok && stat.EphemeralOwner == q.sid && q.node == "" {
			q.uuid, q.firstLook = id, true
			q.haveNode(k, 0)
			q.log.Info("adopted a node whose create reply was lost", "node", k, "session", sessionHex(q.sid))
		} else if ok {
			q.deleteNode(k)
		}
	}
	q.pending = nil
	return nil
}
