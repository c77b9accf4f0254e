package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// raceHoldOff is how long a race participant that released stays out of
// the race when nobody else takes the node, so a release hands leadership
// on whenever anyone else is there.
const raceHoldOff = 500 * time.Millisecond

// raceRecipe is the non-fair race on <path>/leader: everyone tries to create
// it; the losers watch it and all race again when it goes (docs/design/election-and-lease.md,
// "Election modes"). Followers own no node; they are listed from their
// session's meta node. It runs over a host (seam.go) and nothing else.
type raceRecipe struct {
	*core
	watching bool  // following: a watch on the leader node is set
	followed int64 // czxid of the leader node last followed (identity.go)
}

// newRaceRecipe is the race over h.
func newRaceRecipe(h recipeHost, cfg Config, log *slog.Logger, clk clock.Clock, rec Recorder) *raceRecipe {
	r := &raceRecipe{core: newCore(h, cfg, log, clk, rec)}
	r.hooks = coreHooks{resolve: r.resolvePending, forgot: r.forgot, released: r.released}
	return r
}

func (r *raceRecipe) leaderPath() string { return nodePath(r.cfg.Path, raceNode) }

// step does the next piece of work: settle a lost create, verify the node
// won, or race for it (observers and followers in a hold-off watch it
// instead). again reports that more may follow.
func (r *raceRecipe) step() (bool, error) {
	if r.adopt {
		return true, r.adoptLeader()
	}
	if r.pending != nil {
		return true, r.resolvePending()
	}
	if r.node != "" {
		if !r.dirty {
			return false, nil
		}
		return true, r.claim()
	}
	if r.watching {
		return false, nil // following: the leader watch wakes us
	}
	if !r.standing {
		// Observing: watch the leader node, never race for it.
		return false, r.follow(true)
	}
	if err := r.h.preparePath(); err != nil {
		return false, err
	}
	kids, err := r.h.children(r.cfg.Path)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			r.h.pathGone()
		}
		return false, fmt.Errorf("list %s: %w", r.cfg.Path, err)
	}
	if r.refuseForeign(kids) {
		return false, nil
	}
	if err := r.h.publishMeta(); err != nil {
		return false, err
	}
	if r.clock.Now().Before(r.holdOff) {
		// Just released: watch for someone else taking over, race again
		// only when the hold-off ends with nobody leading.
		return false, r.follow(true)
	}
	return r.race()
}

// adoptLeader makes the leader node the own node again when the resumed
// session owns it. A follower owns no node: it follows as before.
func (r *raceRecipe) adoptLeader() error {
	if r.standing {
		if err := r.h.preparePath(); err != nil {
			return err
		}
		if err := r.h.publishMeta(); err != nil {
			return err
		}
	}
	_, stat, err := r.h.get(r.leaderPath())
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("adopt the leader node: %w", err)
	}
	r.adopt = false
	if err == nil && stat.EphemeralOwner == r.sid {
		tok := stat.Czxid + r.cfg.FencingOffset
		r.haveNode(raceNode, tok)
		r.log.Info("adopted the leader node of the resumed session", "node", raceNode,
			"session", sessionHex(r.sid), "fencing_token", tok)
	}
	return nil
}

// race tries to create the leader node: won, it is ours; lost, follow.
func (r *raceRecipe) race() (bool, error) {
	r.pending = &pendingCreate{name: raceNode}
	_, err := r.h.create(r.leaderPath(), []byte(r.cfg.ID), zk.FlagEphemeral)
	switch {
	case err == nil:
		tok := r.nodeToken(raceNode)
		r.haveNode(raceNode, tok)
		r.log.Info("joined (won the race)", "node", raceNode, "session", sessionHex(r.sid), "fencing_token", tok)
		return true, nil
	case errors.Is(err, zk.ErrNodeExists):
		r.pending = nil
		return true, r.follow(false)
	}
	return false, r.createFailed(err)
}

// handle records what a watch or timer says; the next step acts on it.
func (r *raceRecipe) handle(ev event) {
	if ev.kind == evTimer {
		if ev.gen == r.gen {
			r.watching, r.dirty = false, true
		}
		return
	}
	if r.stale(ev) {
		return
	}
	switch ev.kind {
	case evOwn, evLeader:
		r.watching, r.dirty = false, true
	}
}

// released keeps a releasing leader out of the race for a moment, so the
// release hands leadership to someone else when anyone is there.
func (r *raceRecipe) released() { r.holdOff = r.clock.Now().Add(raceHoldOff) }

func (r *raceRecipe) forgot() { r.watching = false }

// stand makes this participant a candidate or an observer: the leader
// watch set so far stops mattering (core.stand), so the next step follows
// the leader node again rather than wait on a watch whose firing it drops.
func (r *raceRecipe) stand(standing bool) {
	r.core.stand(standing)
	r.watching = false
}

// resolvePending settles a create whose reply was lost: the node is ours if
// the live session owns it.
func (r *raceRecipe) resolvePending() error {
	_, stat, err := r.h.get(r.leaderPath())
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("resolve create: %w", err)
	}
	r.pending = nil
	if err == nil && stat.EphemeralOwner == r.sid {
		tok := stat.Czxid + r.cfg.FencingOffset
		r.haveNode(raceNode, tok)
		r.log.Info("joined (adopted the leader node whose create reply was lost)", "node", raceNode,
			"session", sessionHex(r.sid), "fencing_token", tok)
	}
	return nil
}

// claim leads on the node we created, once the live session is known to own
// it; its own watch says when it goes.
func (r *raceRecipe) claim() error {
	if ok, err := r.armOwn(); !ok {
		return err
	}
	r.dirty = false
	if !r.holding() {
		r.h.reidentify() // the path may be new since the read before the create
		r.gen++
		r.takeLead()
	}
	return nil
}

// follow watches the leader node. With absentOK (hold-off after a release) a
// missing node is watched for creation and a timer ends the hold-off.
func (r *raceRecipe) follow(absentOK bool) error {
	r.gen++
	data, stat, err := r.getW(r.leaderPath(), evLeader, raceNode)
	if errors.Is(err, zk.ErrNoNode) {
		if !absentOK {
			return nil // gone already: race again at once
		}
		ok, err := r.existsW(r.leaderPath(), evLeader, raceNode)
		if err != nil {
			return fmt.Errorf("watch leader: %w", err)
		}
		if !ok {
			observed := r.wallNow()
			r.h.publish(func(v *view) { v.leader, v.joined, v.observedAt = nil, true, observed })
			r.watching = true
			if r.standing {
				r.h.after(r.holdOff.Sub(r.clock.Now()), event{kind: evTimer, gen: r.gen})
			}
			return nil
		}
		return r.follow(false)
	}
	if err != nil {
		return fmt.Errorf("watch leader: %w", err)
	}
	r.watching = true
	r.h.wantLease(false) // any follower may win the next race: it renews then
	if stat.Czxid != r.followed {
		// A new leader node: the path may be new too, and its leader names
		// the new incarnation (identity.go).
		r.followed = stat.Czxid
		r.h.reidentify()
	}
	if stat.EphemeralOwner == 0 {
		// No participant made it and none can ever take it: say so, and
		// wait for it to be deleted.
		r.h.refuse(fmt.Sprintf("%s is not ephemeral (no session owns it), so nobody can win the race: delete it", r.leaderPath()))
		r.h.publish(func(v *view) { v.leader, v.joined, v.holds = nil, true, false })
		return nil
	}
	p := r.participant(raceNode, data, stat)
	p.IsLeader = true
	observed := r.wallNow()
	r.h.publish(func(v *view) {
		v.leader, v.joined, v.observedAt, v.participants = &p, true, observed, 1
		v.holds, v.refused = false, ""
	})
	return nil
}

// participants lists the leader, then the electd followers in the order they
// joined, from their meta nodes, with conn from the caller's goroutine.
func (r *raceRecipe) participants(conn zkReader) ([]Participant, error) {
	data, stat, err := conn.Get(r.leaderPath())
	if errors.Is(err, zk.ErrNoNode) {
		return []Participant{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("election: read leader: %w", err)
	}
	p := r.participant(raceNode, data, stat)
	p.IsLeader = true
	return append([]Participant{p}, r.followers(conn, p.Session)...), nil
}

// followers lists the electd sessions under the meta path other than the
// leader's, oldest first. Best effort: the leader is the answer that
// matters, so a failed read lists fewer followers rather than failing.
func (r *raceRecipe) followers(conn zkReader, leader int64) []Participant {
	kids, _, err := conn.Children(metaPath(r.cfg.Path))
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
		data, stat, err := conn.Get(nodePath(metaPath(r.cfg.Path), k))
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
