package election

import (
	"errors"
	"fmt"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// raceHoldOff is how long a race participant that released stays out of
// the race when nobody else takes the node, so a release hands leadership
// on whenever anyone else is there.
const raceHoldOff = 500 * time.Millisecond

// stepRace runs the non-fair race on <path>/leader: everyone tries to create
// it; the losers watch it and all race again when it goes.
func (e *Elector) stepRace() (bool, error) {
	l := &e.loop
	leaderPath := join(e.cfg.Path, raceNode)
	if l.pending != "" {
		// A create whose reply was lost: ours if the live session owns it.
		e.nReads.Add(1)
		_, stat, err := e.s.conn.Get(leaderPath)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false, fmt.Errorf("resolve create: %w", err)
		}
		l.pending = ""
		if err == nil && stat.EphemeralOwner == l.sid {
			l.node, l.dirty = raceNode, true
			tok := stat.Czxid + e.cfg.FencingOffset
			e.updateView(func(v *view) { v.node, v.nodeSession, v.reason, v.ownToken = raceNode, l.sid, "", tok })
			e.log.Info("joined (adopted the leader node whose create reply was lost)", "node", raceNode, "session", sessionHex(l.sid), "fencing_token", tok)
		}
		return true, nil
	}
	if l.node != "" {
		if !l.dirty {
			return false, nil
		}
		return true, e.claim()
	}
	if l.raceWatch {
		return false, nil // following: the leader watch wakes us
	}
	if !l.parentsOK {
		if err := e.ensureParents(e.cfg.Path); err != nil {
			return false, err
		}
		l.parentsOK = true
	}
	e.nReads.Add(1)
	kids, _, err := e.s.conn.Children(e.cfg.Path)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			l.parentsOK = false
		}
		return false, fmt.Errorf("list %s: %w", e.cfg.Path, err)
	}
	if e.refuseForeign(kids) {
		return false, nil
	}
	if err := e.publishAdvertise(); err != nil {
		return false, err
	}
	if now := e.clock.Now(); now.Before(l.holdOff) {
		// Just released: watch for someone else taking over, race again
		// only when the hold-off ends with nobody leading.
		return false, e.followRace(leaderPath, true)
	}
	l.pending = raceNode
	e.nWrites.Add(1)
	_, err = e.s.conn.Create(leaderPath, []byte(e.cfg.ID), zk.FlagEphemeral, e.s.acl)
	switch {
	case err == nil:
		l.pending, l.node, l.dirty = "", raceNode, true
		l.gen++
		tok := e.nodeToken(raceNode)
		e.updateView(func(v *view) { v.node, v.nodeSession, v.reason, v.ownToken = raceNode, l.sid, "", tok })
		e.log.Info("joined (won the race)", "node", raceNode, "session", sessionHex(l.sid), "fencing_token", tok)
		return true, nil
	case errors.Is(err, zk.ErrNodeExists):
		l.pending = ""
		return true, e.followRace(leaderPath, false)
	case isConnErr(err):
		return false, fmt.Errorf("create: %w", err)
	case errors.Is(err, zk.ErrNoNode):
		l.pending, l.parentsOK = "", false
	case errors.Is(err, zk.ErrNoAuth):
		l.pending = ""
		e.noAuth(e.cfg.Path, err)
	default:
		l.pending = ""
	}
	return false, fmt.Errorf("create: %w", err)
}

// followRace watches the leader node. With absentOK (hold-off after a
// release) a missing node is watched for creation and a timer ends the hold-off.
func (e *Elector) followRace(leaderPath string, absentOK bool) error {
	l := &e.loop
	l.gen++
	e.nReads.Add(1)
	data, stat, ch, err := e.s.conn.GetW(leaderPath)
	if errors.Is(err, zk.ErrNoNode) {
		if !absentOK {
			return nil // gone already: race again at once
		}
		e.nReads.Add(1)
		ok, _, ech, err := e.s.conn.ExistsW(leaderPath)
		if err != nil {
			return fmt.Errorf("watch leader: %w", err)
		}
		if !ok {
			e.updateView(func(v *view) { v.leader, v.joined, v.observedAt = nil, true, wallNow() })
			l.raceWatch = true
			e.watch(ech, evLeader, raceNode)
			e.after(l.holdOff.Sub(e.clock.Now()), event{kind: evTimer, gen: l.gen})
			return nil
		}
		return e.followRace(leaderPath, false)
	}
	if err != nil {
		return fmt.Errorf("watch leader: %w", err)
	}
	l.raceWatch = true
	e.watch(ch, evLeader, raceNode)
	p := e.participant(raceNode, data, stat)
	p.IsLeader = true
	e.updateView(func(v *view) {
		v.leader, v.joined, v.observedAt, v.participants = &p, true, wallNow(), 1
		v.holds = false
	})
	return nil
}
