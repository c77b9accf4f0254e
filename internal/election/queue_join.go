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
// (docs/DESIGN.md, "A queue participant's life", steps 1 and 2).

// join creates our protected EPHEMERAL_SEQUENTIAL node, unless the path
// belongs to another mode.
func (q *queueRecipe) join() error {
	e, l := q.e, &q.e.loop
	if err := e.preparePath(); err != nil {
		return err
	}
	if err := e.publishMeta(); err != nil {
		return err
	}
	e.nReads.Add(1)
	kids, _, err := e.zk.Children(e.cfg.Path)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			l.parentsOK = false
		}
		return fmt.Errorf("list %s: %w", e.cfg.Path, err)
	}
	if e.refuseForeign(kids) {
		return nil
	}
	q.peekLeader(kids)
	id := uuid.NewString()
	l.pending = &pendingCreate{uuid: id}
	e.nWrites.Add(1)
	created, err := e.zk.Create(join(e.cfg.Path, nodePrefix(e.cfg.Mode, id)), []byte(e.cfg.ID),
		zk.FlagEphemeralSequential, e.s.acl)
	if err != nil {
		return e.createFailed(err)
	}
	// "joined" is logged after the first re-check (see recheck), which
	// reads the node's token without delaying the leader view.
	q.uuid, q.firstLook = id, true
	e.haveNode(path.Base(created), 0)
	return nil
}

// peekLeader publishes who leads before our own node exists, so that a
// participant that just started names the leader one read after connecting
// rather than after its create and first re-check. Only when no leader is
// known: the re-check right after the create takes over.
func (q *queueRecipe) peekLeader(kids []string) {
	e := q.e
	e.mu.Lock()
	known := e.v.leader != nil
	e.mu.Unlock()
	if known {
		return
	}
	queue := q.queueOf(kids)
	if len(queue) == 0 {
		return
	}
	first := queue[0]
	e.nReads.Add(1)
	if data, stat, err := e.zk.Get(join(e.cfg.Path, first)); err == nil && !q.notEphemeral(first, stat) {
		p := e.participant(first, data, stat)
		p.IsLeader = true
		e.updateView(func(v *view) { v.leader, v.observedAt = &p, e.wallNow() }) // not joined yet
	}
}

// resolvePending settles a create whose reply was lost: adopt the node if
// our live session made it, delete it if an older session did (CURATOR-498).
func (q *queueRecipe) resolvePending() error {
	e, l := q.e, &q.e.loop
	e.nReads.Add(1)
	kids, _, err := e.zk.Children(e.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		l.pending, l.parentsOK = nil, false
		return nil
	}
	if err != nil {
		return fmt.Errorf("resolve create: %w", err)
	}
	id := l.pending.uuid
	for _, k := range kids {
		if protectedID(k) != id {
			continue
		}
		e.nReads.Add(1)
		ok, stat, err := e.zk.Exists(join(e.cfg.Path, k))
		if err != nil {
			return fmt.Errorf("resolve create: %w", err)
		}
		if ok && stat.EphemeralOwner == l.sid && l.node == "" {
			q.uuid, q.firstLook = id, true
			e.haveNode(k, 0)
			e.log.Info("adopted a node whose create reply was lost", "node", k, "session", sessionHex(l.sid))
		} else if ok {
			e.deleteNode(k)
		}
	}
	l.pending = nil
	return nil
}
