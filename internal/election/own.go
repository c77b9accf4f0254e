package election

import (
	"errors"
	"fmt"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The own node's life, common to both recipes: taken (haveNode), verified
// (armOwn), led with (takeLead), given up (release, leaveOnce) or lost
// (forget, newSession). docs/design/election-and-lease.md, "A queue participant's life".

// haveNode records a node this session owns as ours.
func (c *core) haveNode(node string, token int64) {
	c.pending, c.node, c.dirty = nil, node, true
	c.gen++
	sid := c.sid
	c.h.publish(func(v *view) {
		v.node, v.nodeSession, v.refused = node, sid, ""
		if token != 0 {
			v.ownToken = token
		}
	})
}

// forget drops the own node (it is gone or about to be); hint is why
// leadership ends if it held it.
func (c *core) forget(hint LossReason) {
	node, sid := c.node, c.sid
	if c.hooks.forgot != nil {
		c.hooks.forgot()
	}
	c.own = ownNode{}
	c.h.wantLease(false)
	c.node = ""
	c.gen++
	c.h.publish(func(v *view) {
		if v.holds && v.lossHint == "" {
			v.lossHint = hint
		}
		v.holds, v.joined, v.node, v.ownToken = false, false, "", 0
		if v.leader != nil && v.leader.Session == sid && v.leader.Node == node {
			v.leader = nil // it was us; the next re-check finds the new leader
		}
	})
}

// newSession moves to session sid: what the old one owned went with it
// (a pending create's node, if any, becomes an orphan). A session resumed
// from a previous process may own a node already: the next step adopts it.
func (c *core) newSession(sid int64, resumed bool) {
	if c.sid != 0 {
		c.log.Warn("session changed; rejoining", "old_session", sessionHex(c.sid), "session", sessionHex(sid))
		c.forget(LossExpired)
		c.abandonPending()
	}
	c.sid, c.dirty, c.adopt = sid, true, resumed
	c.gen++
}

// armOwn reads the own node and sets a watch on it, once per node: the
// watch then says when it goes (evOwn). It returns false, having dropped the
// node, when the node is gone or belongs to another session (CURATOR-696: a
// node created by an older session's retried request must not make us
// leader). A node's owner never changes, so a node armed once needs no
// second read: the queue's successor arms its node ahead of time, keeping
// the read out of the handoff.
func (c *core) armOwn() (ok bool, err error) {
	if c.own.name == c.node && c.node != "" {
		return true, nil
	}
	data, stat, err := c.getW(nodePath(c.cfg.Path, c.node), evOwn, c.node)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		c.forget(LossExpired)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read own node: %w", err)
	case stat.EphemeralOwner != c.sid:
		c.log.Warn("own node belongs to another session; deleting and rejoining",
			"node", c.node, "owner", sessionHex(stat.EphemeralOwner), "session", sessionHex(c.sid))
		c.deleteNode(c.node)
		c.forget(LossExpired)
		return false, nil
	}
	c.own = ownNode{name: c.node, data: data, stat: stat}
	return true, nil
}

// takeLead records that the own node, armed (armOwn), leads. It returns
// when this leadership began (now, or earlier when it already held the
// node).
func (c *core) takeLead() time.Time {
	c.h.ensureLease()
	self := c.participant(c.node, c.own.data, c.own.stat)
	self.IsLeader = true
	now, node, sid, observed := c.clock.Now(), c.node, c.sid, c.wallNow()
	claimedAt := now
	c.h.publish(func(v *view) {
		if v.holding(node) {
			claimedAt = v.claimedAt
		} else {
			v.claimedAt = now
			v.lossHint = ""
		}
		v.holds, v.joined, v.node, v.nodeSession = true, true, node, sid
		v.token, v.leader, v.observedAt, v.refused = self.FencingToken, &self, observed, ""
	})
	c.log.Debug("claimed", "node", node)
	return claimedAt
}

// release gives leadership up and deletes the own node: the successor's
// predecessor watch fires and it leads within a round-trip; the recipe
// then rejoins (the queue at the back).
//
// When ZooKeeper does not delete the node (a parent ACL without DELETE, or
// a reply lost with the connection), the node is kept as ours and re-checked
// at once: a leader that could not let go leads on, and the caller gets the
// error. Forgetting a node that still exists would leave every follower
// following a leader nobody runs.
func (c *core) release(reason LossReason) error {
	if reason == LossReleased && !c.h.leads() {
		return ErrNotLeader
	}
	node, sid, tok := c.node, c.sid, c.h.viewed().ownToken
	// The application must stop acting before anyone else can start.
	c.h.publish(func(v *view) {
		v.holds, v.lossHint = false, reason
		if v.leader != nil && v.leader.Node == node && v.leader.Session == sid {
			v.leader = nil // not "following" ourselves until the next read
		}
	})
	if c.hooks.released != nil {
		c.hooks.released()
	}
	c.log.Debug("deleting own node", "node", node, "reason", string(reason))
	err := c.h.delete(nodePath(c.cfg.Path, node))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		c.dirty = true
		c.log.Error("could not delete the own node to release leadership; keeping it", "node", node,
			"reason", string(reason), "err", err)
		return fmt.Errorf("release: node %s not deleted, leadership kept: %w", node, err)
	}
	c.forget(reason)
	c.log.Info("released", "node", node, "reason", string(reason), "session", sessionHex(sid), "fencing_token", tok)
	return nil
}

// leaveOnce tries once to delete the own node and settle a pending create,
// and reports whether nothing is left, or the error that kept something;
// reason is logged.
func (c *core) leaveOnce(reason LossReason) (left bool, err error) {
	if c.pending != nil {
		if err := c.hooks.resolve(); err != nil {
			return false, err
		}
	}
	if c.node != "" {
		c.log.Debug("deleting own node", "node", c.node, "reason", string(LossShutdown))
		err := c.h.delete(nodePath(c.cfg.Path, c.node))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false, err
		}
		c.log.Info("released", "node", c.node, "reason", string(reason), "session", sessionHex(c.sid),
			"fencing_token", c.h.viewed().ownToken)
		c.forget(reason)
	}
	return c.pending == nil && c.node == "", nil
}

// refusedForGood reports an error no retry can change: ZooKeeper denies
// the request by the path's ACL.
func refusedForGood(err error) bool {
	return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrInvalidACL)
}
