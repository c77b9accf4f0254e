package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// release gives leadership up and re-queues at the back: the successor's
// predecessor watch fires and it leads within a round-trip.
func (e *Elector) release(reason LossReason) error {
	l := &e.loop
	if reason == LossReleased && !e.Status().IsLeader {
		return ErrNotLeader
	}
	node, tok := l.node, e.ownToken()
	// The application must stop acting before anyone else can start.
	e.updateView(func(v *view) { v.holds, v.lossHint = false, reason })
	e.r.released()
	e.nWrites.Add(1)
	err := e.zk.Delete(join(e.cfg.Path, node), -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		// Keep the node known so a later re-check deletes it by its protected id.
		e.forgetNode(reason)
		return fmt.Errorf("release: %w", err)
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
	for {
		st, sid, _ := e.s.snapshot()
		switch {
		case st == StateClosed:
			return nil // ephemerals went with the session
		case st == StateConnected && sid != l.sid:
			return nil // our nodes belonged to an expired session
		case st == StateConnected:
			if e.leaveOnce() {
				return nil
			}
		}
		retry, stop := after(e.clock, leaveRetry)
		select {
		case <-sess:
		case <-retry:
		case <-ctx.Done():
			stop()
			return fmt.Errorf("election: leave: %w", ctx.Err())
		}
		stop()
	}
}

// leaveOnce tries to delete the own node, a pending create and the meta node
// once, and reports whether nothing is left.
func (e *Elector) leaveOnce() bool {
	l := &e.loop
	if l.pending != nil {
		if err := e.r.resolvePending(); err != nil {
			return false
		}
	}
	if l.node != "" {
		e.nWrites.Add(1)
		err := e.zk.Delete(join(e.cfg.Path, l.node), -1)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false
		}
		e.log.Info("released", "node", l.node, "reason", string(LossShutdown), "session", sessionHex(l.sid), "fencing_token", e.ownToken())
		e.forgetNode(LossShutdown)
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
