package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// recipe is one election mode's steps (docs/DESIGN.md, "Election modes"):
// queueRecipe runs Curator's latch and selector, raceRecipe the race on one
// node. The Elector's loop handles the session, commands and shutdown, and
// calls the recipe only from Run's goroutine (participants excepted).
type recipe interface {
	// step does the next piece of work while connected to session
	// loopState.sid; again reports that more may follow at once.
	step() (again bool, err error)
	// handle records what a watch or timer set by the recipe says; the
	// next step acts on it.
	handle(ev event)
	// resolvePending settles loopState.pending, a create whose reply was
	// lost: adopt the node if the live session made it (CURATOR-498).
	resolvePending() error
	// released runs when the own node is about to be deleted on release.
	released()
	// forget drops the recipe's state about the own node (it is gone).
	forget()
	// participants reads who takes part, in order, leader first; reads
	// only, from any goroutine.
	participants() ([]Participant, error)
	// switchover hands leadership to the participant with id to
	// (Elector.Switchover).
	switchover(ctx context.Context, to string) error
	// handOff, run by a leader about to leave the election, makes the
	// participant Config.Handoff names its successor, without letting go;
	// best effort: the leader then deletes its node whatever happened.
	handOff(ctx context.Context)
}

// refuseForeign reports (and stays out of) a path holding another mode's
// nodes: a latch and a selector (or a race) on one path would each ignore the
// other's leader. It returns true when it refused.
func (e *Elector) refuseForeign(kids []string) bool {
	foreign := foreignNodes(e.cfg.Mode, kids)
	if len(foreign) == 0 {
		e.mu.Lock()
		was := e.v.misconfigured
		e.v.misconfigured = ""
		e.mu.Unlock()
		if was != "" {
			e.log.Info("path no longer holds nodes of another mode; joining")
			e.poke()
		}
		return false
	}
	msg := fmt.Sprintf("%s holds %d node(s) of another election mode (e.g. %s); electd in %s mode refuses to claim leadership there",
		e.cfg.Path, len(foreign), foreign[0], e.cfg.Mode)
	e.mu.Lock()
	was := e.v.misconfigured
	e.v.misconfigured = msg
	e.mu.Unlock()
	e.poke()
	if was != msg {
		e.log.Error("misconfigured election path", "detail", msg)
	}
	e.loop.holdOff = e.clock.Now().Add(misconfigRetry)
	return true
}

// misconfigRetry is how often a participant that refused a path holding
// another mode's nodes looks again.
const misconfigRetry = 2 * time.Second

// takeLead records that the own node, just read as data and stat and
// verified owned by the live session, leads. It returns when this
// leadership began (now, or earlier when it already held the node).
func (e *Elector) takeLead(data []byte, stat *zk.Stat) time.Time {
	l := &e.loop
	e.ensureLease()
	self := e.participant(l.node, data, stat)
	self.IsLeader = true
	now := e.clock.Now()
	claimedAt := now
	e.updateView(func(v *view) {
		if v.holds && v.node == l.node {
			claimedAt = v.claimedAt
		} else {
			v.claimedAt = now
			v.lossHint = ""
		}
		v.holds, v.joined, v.node, v.nodeSession = true, true, l.node, l.sid
		v.token, v.leader, v.observedAt, v.refused = self.FencingToken, &self, e.wallNow(), ""
	})
	e.log.Debug("claimed", "node", l.node)
	return claimedAt
}

// ownNode is the own node as read and watched by armOwn.
type ownNode struct {
	name string // l.node it was read for; "" when not armed
	data []byte
	stat *zk.Stat
}

// armOwn reads the own node and sets a watch on it, once per node: the
// watch then says when it goes (evOwn). It returns false, having dropped the
// node, when the node is gone or belongs to another session (CURATOR-696: a
// node created by an older session's retried request must not make us
// leader). A node's owner never changes, so a node armed once needs no
// second read: the queue's successor arms its node ahead of time, keeping
// the read out of the handoff.
func (e *Elector) armOwn(own *ownNode) (ok bool, err error) {
	l := &e.loop
	if own.name == l.node && l.node != "" {
		return true, nil
	}
	data, stat, err := e.getW(join(e.cfg.Path, l.node), evOwn, l.node)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		e.forgetNode(LossExpired)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read own node: %w", err)
	case stat.EphemeralOwner != l.sid:
		e.log.Warn("own node belongs to another session; deleting and rejoining",
			"node", l.node, "owner", sessionHex(stat.EphemeralOwner), "session", sessionHex(l.sid))
		e.deleteNode(l.node)
		e.forgetNode(LossExpired)
		return false, nil
	}
	*own = ownNode{name: l.node, data: data, stat: stat}
	return true, nil
}

// ownGone stops leading at once when the own node is deleted under us (by
// an operator, or a hostile client on an open path). It runs on the watch's
// goroutine, not Run's: Run may be busy with a re-check of its own, and the
// successor, notified at the same moment, claims after one round-trip
// (TestZKHostileClient saw both lead for a few milliseconds while the old
// leader's loop read the queue). Without its node this participant does
// not lead; Run's re-check then drops the node from the view and rejoins.
func (e *Elector) ownGone(node string) {
	e.updateView(func(v *view) {
		if v.holds && v.node == node {
			v.holds, v.lossHint = false, LossExpired
		}
	})
}

// holding reports whether the view says we lead with node.
func (e *Elector) holding(node string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.v.holds && e.v.node == node
}
