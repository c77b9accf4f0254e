package election

import (
	"errors"
	"fmt"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// Adopting the own node after a resume (package zksession): a restarted process
// that resumed its session finds what the session already has in the
// election and carries on with it. The node keeps its place in the queue
// and its czxid, so its fencing token; a leader leads again once its lease
// is proved on the resumed session (a sync, ensureLease), as any new leader.
// The id's claim node and the meta node are the session's too: claimID and
// publishMeta take them as made.

// adoptOwn finds the queue node the resumed session owns and makes it the
// own node again. Any further node of the session (a create whose reply
// the old process lost) is deleted: the lowest keeps the best place.
func (q *queueRecipe) adoptOwn() error {
	if q.standing {
		// As join does: the id's claim and the meta node before the node.
		if err := q.h.preparePath(); err != nil {
			return err
		}
		if err := q.h.publishMeta(); err != nil {
			return err
		}
	}
	kids, err := q.h.children(q.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		q.adopt = false
		q.h.pathGone()
		return nil
	}
	if err != nil {
		return fmt.Errorf("adopt the own node: %w", err)
	}
	var mine []string
	for _, k := range q.queueOf(kids) {
		ok, stat, err := q.h.exists(nodePath(q.cfg.Path, k))
		if err != nil {
			return fmt.Errorf("adopt the own node: %w", err)
		}
		if ok && stat.EphemeralOwner == q.sid {
			mine = append(mine, k)
		}
	}
	q.adopt = false
	if len(mine) == 0 {
		q.log.Info("the resumed session has no node in the election", "session", sessionHex(q.sid))
		return nil
	}
	for _, k := range mine[1:] {
		q.deleteNode(k)
	}
	q.uuid, q.firstLook = protectedID(mine[0]), true
	q.haveNode(mine[0], 0)
	q.log.Info("adopted the own node of the resumed session", "node", mine[0], "session", sessionHex(q.sid))
	return nil
}
