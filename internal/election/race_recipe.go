package election

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// raceHoldOff is how long a race participant that released stays out of
// the race when nobody else takes the node, so a release hands leadership
// on whenever anyone else is there.
const raceHoldOff = 500 * time.Millisecond

// raceRecipe is the non-fair race on <path>/leader: everyone tries to create
// it; the losers watch it and all race again when it goes (docs/DESIGN.md,
// "Election modes"). Followers own no node; they are listed from their
// session's meta node.
type raceRecipe struct {
	e        *Elector
	watching bool    // following: a watch on the leader node is set
	own      ownNode // the leader node while it is ours (armOwn)
}

func (r *raceRecipe) leaderPath() string { return join(r.e.cfg.Path, raceNode) }

func (r *raceRecipe) step() (bool, error) {
	e, l := r.e, &r.e.loop
	if l.pending != nil {
		return true, r.resolvePending()
	}
	if l.node != "" {
		if !l.dirty {
			return false, nil
		}
		return true, r.claim()
	}
	if r.watching {
		return false, nil // following: the leader watch wakes us
	}
	if !l.standing {
		// Observing: watch the leader node, never race for it.
		return false, r.follow(true)
	}
	if err := e.preparePath(); err != nil {
		return false, err
	}
	e.nReads.Add(1)
	kids, _, err := e.zk.Children(e.cfg.Path)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			l.parentsOK = false
		}
		return false, fmt.Errorf("list %s: %w", e.cfg.Path, err)
	}
	if e.refuseForeign(kids) {
		return false, nil
	}
	if err := e.publishMeta(); err != nil {
		return false, err
	}
	if e.clock.Now().Before(l.holdOff) {
		// Just released: watch for someone else taking over, race again
		// only when the hold-off ends with nobody leading.
		return false, r.follow(true)
	}
	l.pending = &pendingCreate{name: raceNode}
	e.nWrites.Add(1)
	_, err = e.zk.Create(r.leaderPath(), []byte(e.cfg.ID), zk.FlagEphemeral, e.s.acl)
	switch {
	case err == nil:
		tok := e.nodeToken(raceNode)
		e.haveNode(raceNode, tok)
		e.log.Info("joined (won the race)", "node", raceNode, "session", sessionHex(l.sid), "fencing_token", tok)
		return true, nil
	case errors.Is(err, zk.ErrNodeExists):
		l.pending = nil
		return true, r.follow(false)
	}
	return false, e.createFailed(err)
}

func (r *raceRecipe) handle(ev event) {
	e, l := r.e, &r.e.loop
	if ev.kind == evTimer {
		if ev.gen == l.gen {
			r.watching, l.dirty = false, true
		}
		return
	}
	if e.stale(ev) {
		return
	}
	switch ev.kind {
	case evOwn, evLeader:
		r.watching, l.dirty = false, true
	}
}

// released keeps a releasing leader out of the race for a moment, so the
// release hands leadership to someone else when anyone is there.
func (r *raceRecipe) released() {
	r.e.loop.holdOff = r.e.clock.Now().Add(raceHoldOff)
}

func (r *raceRecipe) forget() { r.watching, r.own = false, ownNode{} }

// resolvePending settles a create whose reply was lost: the node is ours if
// the live session owns it.
func (r *raceRecipe) resolvePending() error {
	e, l := r.e, &r.e.loop
	e.nReads.Add(1)
	_, stat, err := e.zk.Get(r.leaderPath())
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("resolve create: %w", err)
	}
	l.pending = nil
	if err == nil && stat.EphemeralOwner == l.sid {
		tok := stat.Czxid + e.cfg.FencingOffset
		e.haveNode(raceNode, tok)
		e.log.Info("joined (adopted the leader node whose create reply was lost)", "node", raceNode,
			"session", sessionHex(l.sid), "fencing_token", tok)
	}
	return nil
}

// claim leads on the node we created, once the live session is known to own
// it; its own watch says when it goes.
func (r *raceRecipe) claim() error {
	e, l := r.e, &r.e.loop
	if ok, err := e.armOwn(&r.own); !ok {
		return err
	}
	l.dirty = false
	if !e.holding(l.node) {
		l.gen++
		e.takeLead(r.own.data, r.own.stat)
	}
	return nil
}

// follow watches the leader node. With absentOK (hold-off after a release) a
// missing node is watched for creation and a timer ends the hold-off.
func (r *raceRecipe) follow(absentOK bool) error {
	e, l := r.e, &r.e.loop
	l.gen++
	data, stat, err := e.getW(r.leaderPath(), evLeader, raceNode)
	if errors.Is(err, zk.ErrNoNode) {
		if !absentOK {
			return nil // gone already: race again at once
		}
		ok, err := e.existsW(r.leaderPath(), evLeader, raceNode)
		if err != nil {
			return fmt.Errorf("watch leader: %w", err)
		}
		if !ok {
			e.updateView(func(v *view) { v.leader, v.joined, v.observedAt = nil, true, e.wallNow() })
			r.watching = true
			if l.standing {
				e.after(l.holdOff.Sub(e.clock.Now()), event{kind: evTimer, gen: l.gen})
			}
			return nil
		}
		return r.follow(false)
	}
	if err != nil {
		return fmt.Errorf("watch leader: %w", err)
	}
	r.watching = true
	e.wantLease(false) // any follower may win the next race: it renews then
	if stat.EphemeralOwner == 0 {
		// No participant made it and none can ever take it: say so, and
		// wait for it to be deleted.
		e.refuse(fmt.Sprintf("%s is not ephemeral (no session owns it), so nobody can win the race: delete it", r.leaderPath()))
		e.updateView(func(v *view) { v.leader, v.joined, v.holds = nil, true, false })
		return nil
	}
	p := e.participant(raceNode, data, stat)
	p.IsLeader = true
	e.updateView(func(v *view) {
		v.leader, v.joined, v.observedAt, v.participants = &p, true, e.wallNow(), 1
		v.holds, v.refused = false, ""
	})
	return nil
}

// participants lists the leader, then the electd followers in the order they
// joined, from their meta nodes.
func (r *raceRecipe) participants() ([]Participant, error) {
	e := r.e
	data, stat, err := e.zk.Get(r.leaderPath())
	if errors.Is(err, zk.ErrNoNode) {
		return []Participant{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("election: read leader: %w", err)
	}
	p := e.participant(raceNode, data, stat)
	p.IsLeader = true
	return append([]Participant{p}, r.followers(p.Session)...), nil
}

// followers lists the electd sessions under metaPath other than the
// leader's, oldest first. Best effort: the leader is the answer that matters,
// so a failed read lists fewer followers rather than failing the call.
func (r *raceRecipe) followers(leader int64) []Participant {
	e := r.e
	kids, _, err := e.zk.Children(e.metaPath())
	if err != nil {
		return nil
	}
	type follower struct {
		p     Participant
		czxid int64
	}
	var fs []follower
	for _, k := range kids {
		sid, err := strconv.ParseUint(strings.TrimPrefix(k, "0x"), 16, 64)
		if err != nil || int64(sid) == leader {
			continue
		}
		data, stat, err := e.zk.Get(join(e.metaPath(), k))
		if err != nil {
			continue
		}
		m := parseMeta(data)
		fs = append(fs, follower{Participant{ID: m.ID, Advertise: m.Advertise, Session: int64(sid)}, stat.Czxid})
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].czxid < fs[j].czxid })
	out := make([]Participant, len(fs))
	for i, f := range fs {
		out[i] = f.p
	}
	return out
}

// switchover needs a queue: the race has none.
func (r *raceRecipe) switchover(context.Context, string) error { return ErrNoQueue }

// handOff: whoever wins the next race leads.
func (r *raceRecipe) handOff(context.Context) {}
