package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
	"github.com/google/uuid"
)

// misconfigRetry is how often a participant that refused a path holding
// another mode's nodes looks again.
const misconfigRetry = 2 * time.Second

// stepQueue runs the latch and selector recipes (Curator's layout).
func (e *Elector) stepQueue() (bool, error) {
	l := &e.loop
	if l.pending != "" {
		if err := e.resolvePending(); err != nil {
			return false, err
		}
		return true, nil
	}
	if l.node == "" {
		if e.clock.Now().Before(l.holdOff) {
			return false, nil
		}
		if err := e.join(); err != nil {
			return false, err
		}
		return l.node != "", nil
	}
	if l.dirty {
		if err := e.recheck(); err != nil {
			return false, err
		}
		return l.dirty || l.node == "", nil
	}
	if l.termDue {
		return true, e.endTerm()
	}
	return false, nil
}

// ensureParents creates the election path and its parents as CONTAINER
// nodes, which ZooKeeper removes once empty. An existing path costs one read,
// not a create per level, and needs no create permission on its parents.
func (e *Elector) ensureParents(p string) error {
	e.nReads.Add(1)
	if ok, _, err := e.s.conn.Exists(p); err == nil && ok {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		_, err := e.s.conn.CreateContainer(cur, nil, zk.FlagContainer, e.s.acl)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			if errors.Is(err, zk.ErrNoAuth) {
				e.noAuth(cur, err)
			}
			return fmt.Errorf("create %s: %w", cur, err)
		}
		e.nWrites.Add(1)
	}
	return nil
}

func (e *Elector) noAuth(p string, err error) {
	msg := fmt.Sprintf("no permission on %s (%v): check zookeeper.auth", p, err)
	e.log.Error("zookeeper refused a write", "node", p, "err", err)
	e.updateView(func(v *view) { v.reason = msg })
}

// metaPath holds one ephemeral node per electd session, named by the session
// id, with the participant's id and advertise data (metaData, JSON). It sits
// beside (not inside) the election path so Curator clients sharing the
// election never see it, and the election node's data stays the bare id.
// It is also how race followers, which own no election node, are listed.
func (e *Elector) metaPath() string { return e.cfg.Path + ".advertise" }

// metaData is the content of a node under metaPath.
type metaData struct {
	ID        string `json:"id"`
	Advertise string `json:"advertise"`
}

// parseMeta reads a metaPath node; a bare string is taken as advertise data.
func parseMeta(b []byte) metaData {
	var m metaData
	if len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &m) == nil {
		return m
	}
	return metaData{Advertise: string(b)}
}

func (e *Elector) publishAdvertise() error {
	l := &e.loop
	if l.metaSID == l.sid {
		return nil
	}
	mp := e.metaPath()
	if err := e.ensureParents(mp); err != nil {
		return err
	}
	data, _ := json.Marshal(metaData{ID: e.cfg.ID, Advertise: e.cfg.Advertise})
	e.nWrites.Add(1)
	_, err := e.s.conn.Create(join(mp, sessionHex(l.sid)), data, zk.FlagEphemeral, e.s.acl)
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		if errors.Is(err, zk.ErrNoAuth) {
			e.noAuth(mp, err)
		}
		return fmt.Errorf("publish advertise: %w", err)
	}
	l.metaSID = l.sid
	return nil
}

// advertiseOf returns a session's advertise data, cached: it never changes
// for the life of a session.
func (e *Elector) advertiseOf(session int64) string {
	if session == 0 {
		return ""
	}
	e.mu.Lock()
	a, ok := e.loop.advCache[session]
	e.mu.Unlock()
	if ok {
		return a
	}
	e.nReads.Add(1)
	data, _, err := e.s.conn.Get(join(e.metaPath(), sessionHex(session)))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "" // not cached: try again next time
	}
	e.mu.Lock()
	if len(e.loop.advCache) > 1024 {
		e.loop.advCache = map[int64]string{}
	}
	a = parseMeta(data).Advertise
	e.loop.advCache[session] = a
	e.mu.Unlock()
	return a
}

// join creates our protected EPHEMERAL_SEQUENTIAL node, unless the path
// belongs to another mode.
func (e *Elector) join() error {
	l := &e.loop
	if !l.parentsOK {
		if err := e.ensureParents(e.cfg.Path); err != nil {
			return err
		}
		l.parentsOK = true
	}
	if err := e.publishAdvertise(); err != nil {
		return err
	}
	e.nReads.Add(1)
	kids, _, err := e.s.conn.Children(e.cfg.Path)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			l.parentsOK = false
		}
		return fmt.Errorf("list %s: %w", e.cfg.Path, err)
	}
	if e.refuseForeign(kids) {
		return nil
	}
	e.peekLeader(kids)
	id := uuid.NewString()
	l.pending = id
	e.nWrites.Add(1)
	created, err := e.s.conn.Create(join(e.cfg.Path, nodePrefix(e.cfg.Mode, id)), []byte(e.cfg.ID),
		zk.FlagEphemeralSequential, e.s.acl)
	switch {
	case err == nil:
		l.pending, l.node, l.uuid = "", path.Base(created), id
		l.dirty, l.firstLook = true, true
		l.gen++
		// "joined" is logged after the first re-check (see recheck), which
		// reads the node's token without delaying the leader view.
		e.updateView(func(v *view) { v.node, v.nodeSession, v.reason = l.node, l.sid, "" })
		return nil
	case isConnErr(err):
		return fmt.Errorf("create: %w", err) // outcome unknown: resolved after reconnect
	case errors.Is(err, zk.ErrNoNode):
		l.pending, l.parentsOK = "", false
	case errors.Is(err, zk.ErrNoAuth):
		l.pending = ""
		e.noAuth(e.cfg.Path, err)
	default:
		l.pending = ""
	}
	return fmt.Errorf("create: %w", err)
}

// peekLeader publishes who leads before our own node exists, so that a
// participant that just started names the leader one read after connecting
// rather than after its create and first re-check. Only when no leader is
// known: the re-check right after the create takes over.
func (e *Elector) peekLeader(kids []string) {
	if len(kids) == 0 {
		return
	}
	e.mu.Lock()
	known := e.v.leader != nil
	e.mu.Unlock()
	if known {
		return
	}
	first := sortQueue(kids, e.tag)[0]
	e.nReads.Add(1)
	if data, stat, err := e.s.conn.Get(join(e.cfg.Path, first)); err == nil {
		p := e.participant(first, data, stat)
		p.IsLeader = true
		e.updateView(func(v *view) { v.leader, v.observedAt = &p, wallNow() }) // not joined yet
	}
}

// refuseForeign reports (and stays out of) a path holding another mode's nodes.
func (e *Elector) refuseForeign(kids []string) bool {
	l := &e.loop
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
	l.holdOff = e.clock.Now().Add(misconfigRetry)
	return true
}

// resolvePending settles a create whose reply was lost: adopt the node if
// our live session made it, delete it if an older session did (CURATOR-498).
func (e *Elector) resolvePending() error {
	l := &e.loop
	e.nReads.Add(1)
	kids, _, err := e.s.conn.Children(e.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		l.pending, l.parentsOK = "", false
		return nil
	}
	if err != nil {
		return fmt.Errorf("resolve create: %w", err)
	}
	for _, k := range kids {
		if protectedID(k) != l.pending {
			continue
		}
		e.nReads.Add(1)
		ok, stat, err := e.s.conn.Exists(join(e.cfg.Path, k))
		if err != nil {
			return fmt.Errorf("resolve create: %w", err)
		}
		if ok && stat.EphemeralOwner == l.sid && l.node == "" {
			l.node, l.uuid = k, l.pending
			l.dirty, l.firstLook = true, true
			l.gen++
			e.updateView(func(v *view) { v.node, v.nodeSession, v.reason = l.node, l.sid, "" })
			e.log.Info("adopted a node whose create reply was lost", "node", k, "session", sessionHex(l.sid))
		} else if ok {
			e.deleteNode(k)
		}
	}
	l.pending = ""
	return nil
}

// deleteNode deletes a node of ours that is not wanted; best effort, the
// next re-check finds it again by its protected id if this fails.
func (e *Elector) deleteNode(name string) {
	e.nWrites.Add(1)
	err := e.s.conn.Delete(join(e.cfg.Path, name), -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		e.log.Warn("could not delete orphan node; will retry", "node", name, "err", err)
		return
	}
	e.log.Info("deleted orphan node", "node", name)
}

// reapOld deletes nodes that carry a protected id we gave up (CURATOR-45/79).
func (e *Elector) reapOld(kids []string) {
	if len(e.loop.old) == 0 {
		return
	}
	for _, k := range kids {
		if id := protectedID(k); id != "" && e.loop.old[id] && k != e.loop.node {
			e.deleteNode(k)
		}
	}
}

// recheck reads the queue and decides: lead, or watch the predecessor.
func (e *Elector) recheck() error {
	l := &e.loop
	e.nChecks.Add(1)
	kids, _, err := e.s.conn.Children(e.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		// The path itself is gone (CURATOR-724): recreate it and rejoin.
		e.log.Warn("election path vanished; recreating and rejoining")
		l.parentsOK = false
		e.forgetNode(LossExpired)
		return nil
	}
	if err != nil {
		return fmt.Errorf("re-check: %w", err)
	}
	if foreign := foreignNodes(e.cfg.Mode, kids); len(foreign) > 0 {
		e.deleteNode(l.node)
		e.forgetNode(LossSuspended)
		e.refuseForeign(kids)
		return nil
	}
	e.reapOld(kids)
	sorted := sortQueue(kids, e.tag)
	l.members = sorted
	idx := indexOf(sorted, l.node)
	if idx < 0 {
		e.log.Warn("own node vanished; rejoining", "node", l.node)
		e.forgetNode(LossExpired)
		return nil
	}
	e.updateView(func(v *view) { v.participants = len(sorted) })
	if idx == 0 {
		err = e.claim()
	} else {
		err = e.follow(sorted, idx)
	}
	if err == nil && l.firstLook && l.node != "" {
		// After the decision, so a newcomer names the leader a few reads sooner.
		l.firstLook = false
		tok := e.checkDuplicates(sorted)
		e.updateView(func(v *view) { v.ownToken = tok })
		e.log.Info("joined", "node", l.node, "session", sessionHex(l.sid), "fencing_token", tok,
			"position", idx, "participants", len(sorted))
	}
	return err
}

// claim takes leadership of the lowest node, after checking that the live
// session owns it (CURATOR-696: a node created by an older session's retried
// request must not make us leader).
//
// The leader also watches the path's children. Followers watch only their
// predecessor, so without it nobody would notice a node of another recipe
// sorting before ours (Curator sorts by its own tag): such a path must make
// us step down as misconfigured. One watch on one participant: no herd.
// It also keeps the leader's participant count exact.
func (e *Elector) claim() error {
	l := &e.loop
	if l.ownWatch == l.gen && e.holding(l.node) {
		return e.watchMembers() // re-check while leading: own node already checked and watched
	}
	e.nReads.Add(1)
	data, stat, ch, err := e.s.conn.GetW(join(e.cfg.Path, l.node))
	if errors.Is(err, zk.ErrNoNode) {
		e.forgetNode(LossExpired)
		return nil
	}
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if stat.EphemeralOwner != l.sid {
		e.log.Warn("lowest node belongs to another session; deleting and rejoining",
			"node", l.node, "owner", sessionHex(stat.EphemeralOwner), "session", sessionHex(l.sid))
		e.deleteNode(l.node)
		e.forgetNode(LossExpired)
		return nil
	}
	l.gen++
	e.watch(ch, evOwn, l.node)
	l.ownWatch = l.gen
	l.dirty, l.queue = false, nil
	self := e.participant(l.node, data, stat)
	self.IsLeader = true
	now := e.clock.Now()
	var claimedAt = now
	e.updateView(func(v *view) {
		if v.holds && v.node == l.node {
			claimedAt = v.claimedAt
		} else {
			v.claimedAt = now
			v.lossHint = ""
		}
		v.holds, v.joined, v.node, v.nodeSession = true, true, l.node, l.sid
		v.token, v.leader, v.observedAt, v.reason = self.FencingToken, &self, wallNow(), ""
	})
	if e.cfg.Mode == ModeSelector && e.cfg.Term > 0 && l.termNode != l.node {
		l.termNode = l.node
		d := claimedAt.Add(e.cfg.ClaimDelay + e.cfg.Term).Sub(e.clock.Now())
		e.after(d, event{kind: evTerm, node: l.node})
	}
	return e.watchMembers()
}

// holding reports whether the view says we lead with node.
func (e *Elector) holding(node string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.v.holds && e.v.node == node
}

// watchMembers sets the leader's children watch (see claim). A failure only
// delays noticing a newcomer: the next re-check sets it again.
func (e *Elector) watchMembers() error {
	l := &e.loop
	l.dirty = false
	if e.cfg.Mode == ModeRace {
		return nil // one node, whose own watch covers it
	}
	e.nReads.Add(1)
	kids, _, ch, err := e.s.conn.ChildrenW(e.cfg.Path)
	if err != nil {
		l.dirty = true
		return fmt.Errorf("watch members: %w", err)
	}
	e.watch(ch, evMembers, l.node)
	// A node created between the re-check's read and this one fires no
	// watch: look again if the queue changed in between.
	if !slices.Equal(sortQueue(kids, e.tag), l.members) {
		l.dirty = true
	}
	return nil
}

// follow watches the predecessor (getData, not exists: a watch on a missing
// node would leak) and, separately, the leader, so /leader is current on
// every follower. Leadership is set false before watching (CURATOR-653).
func (e *Elector) follow(sorted []string, idx int) error {
	l := &e.loop
	e.updateView(func(v *view) {
		if v.holds && v.lossHint == "" {
			v.lossHint = LossReleased
		}
		v.holds = false
	})
	l.gen++
	l.queue = sorted[:idx]
	if idx > 1 {
		// The leader first: the view is current one read sooner.
		l.leaderIdx = -1
		e.walk()
	}
	pred := sorted[idx-1]
	e.nReads.Add(1)
	data, stat, ch, err := e.s.conn.GetW(join(e.cfg.Path, pred))
	if errors.Is(err, zk.ErrNoNode) {
		return nil // l.dirty stays: read the queue again (not recreate: CURATOR-645)
	}
	if err != nil {
		return fmt.Errorf("watch predecessor: %w", err)
	}
	e.watch(ch, evPred, pred)
	l.dirty = idx > 1 && l.leaderIdx < 0 // the walk found no leader: look again
	if idx == 1 {
		l.leaderIdx = 0
		e.setLeader(pred, data, stat)
	}
	return nil
}

// walk finds the leader after the one we watched vanished: the first node of
// our cached queue that still exists. Nodes created since have higher
// sequence numbers, so none can sort before it. Reads only; the predecessor
// has its own watch, which triggers a real re-check.
func (e *Elector) walk() {
	l := &e.loop
	for i := l.leaderIdx + 1; i < len(l.queue); i++ {
		name := join(e.cfg.Path, l.queue[i])
		e.nReads.Add(1)
		if i == len(l.queue)-1 {
			data, stat, err := e.s.conn.Get(name)
			if err != nil {
				return // gone or unreachable: the predecessor watch or session path takes over
			}
			l.leaderIdx = i
			e.setLeader(l.queue[i], data, stat)
			return
		}
		data, stat, ch, err := e.s.conn.GetW(name)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			l.dirty = true
			return
		}
		l.leaderIdx = i
		e.watch(ch, evLeader, l.queue[i])
		e.setLeader(l.queue[i], data, stat)
		return
	}
}

// setLeader records the leader as read from its node.
func (e *Elector) setLeader(name string, data []byte, stat *zk.Stat) {
	p := e.participant(name, data, stat)
	p.IsLeader = true
	e.updateView(func(v *view) {
		v.leader, v.observedAt, v.joined = &p, wallNow(), true
	})
}

// checkDuplicates logs and counts ids used by more than one node; allowed
// (a replacement pod may join before the old one's node is gone), but worth
// an operator's look. Done once per join.
func (e *Elector) checkDuplicates(sorted []string) (ownToken int64) {
	seen := map[string]int{}
	for _, name := range sorted {
		e.nReads.Add(1)
		data, stat, err := e.s.conn.Get(join(e.cfg.Path, name))
		if err != nil {
			continue
		}
		seen[string(data)]++
		if name == e.loop.node {
			ownToken = stat.Czxid + e.cfg.FencingOffset
		}
	}
	for id, n := range seen {
		if n > 1 {
			e.log.Warn("duplicate participant id", "dup_id", id, "nodes", n)
			e.rec.DuplicateID(id)
		}
	}
	return ownToken
}

// endTerm ends a selector leader's term: re-queue at the back, unless nobody
// is queued behind us, in which case keep leading (no flap) and watch for the
// first newcomer.
func (e *Elector) endTerm() error {
	l := &e.loop
	e.mu.Lock()
	holds := e.v.holds && e.v.node == l.node
	e.mu.Unlock()
	if !holds || l.node == "" {
		l.termDue = false
		return nil
	}
	e.nReads.Add(1)
	kids, _, ch, err := e.s.conn.ChildrenW(e.cfg.Path)
	if err != nil {
		return fmt.Errorf("term end: %w", err)
	}
	l.termDue = false
	if len(kids) <= 1 {
		e.watch(ch, evChildren, l.node)
		return nil
	}
	e.log.Info("term ended; re-queueing", "node", l.node)
	return e.release(LossTerm)
}

// release gives leadership up and re-queues at the back: the successor's
// predecessor watch fires and it leads within a round-trip.
func (e *Elector) release(reason LossReason) error {
	l := &e.loop
	if reason == LossReleased {
		if st := e.Status(); !st.IsLeader {
			return errNotLeader
		}
	}
	node, tok := l.node, e.ownToken()
	// The application must stop acting before anyone else can start.
	e.updateView(func(v *view) { v.holds, v.lossHint = false, reason })
	if e.cfg.Mode == ModeRace {
		l.holdOff = e.clock.Now().Add(raceHoldOff)
		l.pending = ""
	}
	e.nWrites.Add(1)
	err := e.s.conn.Delete(join(e.cfg.Path, node), -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		// Keep the node known so a later re-check deletes it by its protected id.
		e.forgetNode(reason)
		return fmt.Errorf("release: %w", err)
	}
	e.forgetNode(reason)
	e.log.Info("released", "node", node, "reason", string(reason), "session", sessionHex(l.sid), "fencing_token", tok)
	return nil
}

// leave deletes everything this participant has in the election, waiting
// for a reconnect when needed (CURATOR-202), until done or ctx ends.
func (e *Elector) leave(ctx context.Context) error {
	l := &e.loop
	l.stopping = true
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
			if l.pending != "" && e.cfg.Mode != ModeRace {
				if err := e.resolvePending(); err != nil {
					break
				}
			}
			if e.cfg.Mode == ModeRace && l.pending != "" {
				e.nReads.Add(1)
				if _, stat, err := e.s.conn.Get(join(e.cfg.Path, raceNode)); err == nil && stat.EphemeralOwner == l.sid {
					l.node = raceNode
				}
				l.pending = ""
			}
			if l.node != "" {
				e.nWrites.Add(1)
				err := e.s.conn.Delete(join(e.cfg.Path, l.node), -1)
				if err != nil && !errors.Is(err, zk.ErrNoNode) {
					break
				}
				e.log.Info("released", "node", l.node, "reason", string(LossShutdown), "session", sessionHex(l.sid), "fencing_token", e.ownToken())
				e.forgetNode(LossShutdown)
			}
			if l.metaSID == l.sid && l.metaSID != 0 {
				e.nWrites.Add(1)
				_ = e.s.conn.Delete(join(e.metaPath(), sessionHex(l.sid)), -1)
				l.metaSID = 0
			}
			if l.pending == "" && l.node == "" {
				return nil
			}
		}
		select {
		case <-sess:
		case <-ctx.Done():
			return fmt.Errorf("election: leave: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func wallNow() time.Time { return time.Now().UTC() }
