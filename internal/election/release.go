package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// release gives leadership up and re-queues at the back: the successor's
// predecessor watch fires and it leads within a round-trip.
//
// When ZooKeeper does not delete the node (a parent ACL without DELETE, or
// a reply lost with the connection), the node is kept as ours and re-checked
// at once: a leader that could not let go leads on, and the caller gets the
// error. Forgetting a node that still exists would leave every follower
// following a leader nobody runs.
func (e *Elector) release(reason LossReason) error {
	l := &e.loop
	if reason == LossReleased && !e.Status().IsLeader {
		return ErrNotLeader
	}
	node, tok := l.node, e.ownToken()
	// The application must stop acting before anyone else can start.
	e.updateView(func(v *view) {
		v.holds, v.lossHint = false, reason
		if v.leader != nil && v.leader.Node == node && v.leader.Session == l.sid {
			v.leader = nil // not "following" ourselves until the next read
		}
	})
	e.r.released()
	e.nWrites.Add(1)
	e.log.Debug("deleting own node", "node", node, "reason", string(reason))
	err := e.zk.Delete(join(e.cfg.Path, node), -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		l.dirty = true
		e.log.Error("could not delete the own node to release leadership; keeping it", "node", node,
			"reason", string(reason), "err", err)
		return fmt.Errorf("release: node %s not deleted, leadership kept: %w", node, err)
	}
	e.forgetNode(reason)
	e.log.Info("released", "node", node, "reason", string(reason), "session", sessionHex(l.sid), "fencing_token", tok)
	return nil
}

// ownToken is the fencing token of the own node as last read.
func (e *Elector) ownToken() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.v.ownToken
}

// leave deletes everything this participant has in the election, waiting
// for a reconnect when needed (CURATOR-202), until done or ctx ends.
func (e *Elector) leave(ctx context.Context) error {
	l := &e.loop
	sess, cancel := e.s.subscribe()
	defer cancel()
	if st, sid, _ := e.s.snapshot(); st == StateConnected && sid == l.sid && e.holding(l.node) {
		e.r.handOff(ctx) // a leader leaving for good picks its successor (Config.Handoff)
	}
	for {
		st, sid, _ := e.s.snapshot()
		switch {
		case l.node == "" && l.pending == nil:
			// Nothing in the election to delete: the meta node, if any,
			// goes with the session when it is closed.
			return nil
		case st == StateClosed:
			return nil // ephemerals went with the session
		case st == StateConnected && sid != l.sid:
			return nil // our nodes belonged to an expired session
		case st == StateConnected:
			if e.leaveOnce(LossShutdown) {
				return nil
			}
		}
		retry, stop := clock.Deadline(e.clock, leaveRetry)
		select {
		case <-sess:
		case <-retry:
		case <-ctx.Done():
			stop()
			return e.leftBehind(ctx.Err())
		}
		stop()
	}
}

// leaveOnce tries to delete the own node, a pending create and the meta node
// once, and reports whether nothing is left. reason is logged.
func (e *Elector) leaveOnce(reason LossReason) bool {
	l := &e.loop
	if l.pending != nil {
		if err := e.r.resolvePending(); err != nil {
			return false
		}
	}
	if l.node != "" {
		e.nWrites.Add(1)
		e.log.Debug("deleting own node", "node", l.node, "reason", string(LossShutdown))
		err := e.zk.Delete(join(e.cfg.Path, l.node), -1)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false
		}
		e.log.Info("released", "node", l.node, "reason", string(reason), "session", sessionHex(l.sid), "fencing_token", e.ownToken())
		e.forgetNode(reason)
	}
	if l.metaSID == l.sid && l.metaSID != 0 {
		e.nWrites.Add(1)
		_ = e.zk.Delete(join(e.metaPath(), sessionHex(l.sid)), -1)
		l.metaSID = 0
	}
	return l.pending == nil && l.node == ""
}

// leaveRetry paces leave while the connection is down or deletes fail.
const leaveRetry = 100 * time.Millisecond

// leftBehind says what leave could not delete and what happens to it.
func (e *Elector) leftBehind(cause error) error {
	l := &e.loop
	what := "node " + l.node
	if l.node == "" {
		what = "a create whose reply was lost"
	}
	return fmt.Errorf("election: leave: %s of session %s not deleted (zookeeper %s): ZooKeeper removes it when the session expires, within %v: %w",
		what, sessionHex(l.sid), e.s.State(), e.leaveTimeout(), cause)
}
