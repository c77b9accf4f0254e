package election

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The znode work both recipes share: the election path's CONTAINER parents,
// the meta node every electd session publishes, deleting our own nodes, and
// what a failed create means. docs/DESIGN.md, "Node layout".

// preparePath makes the election path ready to join, once per session: its
// ACL checked (checkACL) and the path and its parents created.
func (e *Elector) preparePath() error {
	l := &e.loop
	if l.parentsOK {
		return nil
	}
	if err := e.checkACL(); err != nil {
		return err
	}
	if err := e.ensureParents(e.cfg.Path); err != nil {
		return err
	}
	l.parentsOK = true
	return nil
}

// ensureParents creates p and its parents as CONTAINER nodes, which
// ZooKeeper removes once empty. An existing path costs one read, not a
// create per level, and needs no create permission on its parents.
func (e *Elector) ensureParents(p string) error {
	e.nReads.Add(1)
	if ok, _, err := e.zk.Exists(p); err == nil && ok {
		return nil
	}
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		cur += "/" + part
		e.nWrites.Add(1)
		_, err := e.zk.CreateContainer(cur, nil, zk.FlagContainer, e.s.acl)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			if errors.Is(err, zk.ErrNoAuth) {
				e.refused(cur, err)
			}
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

// refused reports a write ZooKeeper refused for lack of permission: the
// participant cannot stand until it is fixed.
// It is logged once per distinct refusal, not on every retry.
func (e *Elector) refused(p string, err error) {
	e.refuse(fmt.Sprintf("no permission on %s (%v): check zookeeper.auth", p, err), "node", p, "err", err)
}

// refuse records msg as why this participant cannot stand, logging it
// when it is new.
func (e *Elector) refuse(msg string, attrs ...any) {
	e.mu.Lock()
	was := e.v.refused
	e.v.refused = msg
	e.mu.Unlock()
	e.poke()
	if was != msg {
		e.log.Error("cannot stand in the election: "+msg, attrs...)
	}
}

// createFailed handles what a failed create of the own node means to both
// recipes and returns the error to retry on. A lost reply (connection error)
// keeps the pending create: the recipe resolves it after reconnecting.
func (e *Elector) createFailed(err error) error {
	l := &e.loop
	switch {
	case isConnErr(err):
		return fmt.Errorf("create: %w", err) // outcome unknown
	case errors.Is(err, zk.ErrNoNode):
		l.parentsOK = false // the path vanished: make it again
	case errors.Is(err, zk.ErrNoAuth):
		e.refused(e.cfg.Path, err)
	}
	l.pending = nil
	return fmt.Errorf("create: %w", err)
}

// haveNode records a node this session owns as ours.
func (e *Elector) haveNode(node string, token int64) {
	l := &e.loop
	l.pending, l.node, l.dirty = nil, node, true
	l.gen++
	e.updateView(func(v *view) {
		v.node, v.nodeSession, v.refused = node, l.sid, ""
		if token != 0 {
			v.ownToken = token
		}
	})
}

// deleteNode deletes a node of ours that is not wanted; best effort, the
// next re-check finds it again by its protected id if this fails.
func (e *Elector) deleteNode(name string) {
	e.nWrites.Add(1)
	err := e.zk.Delete(join(e.cfg.Path, name), -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		e.log.Warn("could not delete orphan node; will retry", "node", name, "err", err)
		return
	}
	e.log.Info("deleted orphan node", "node", name)
}

// reapOld deletes children that carry a protected id we gave up (CURATOR-45/79).
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

// participant builds a Participant from a node read.
func (e *Elector) participant(name string, data []byte, stat *zk.Stat) Participant {
	m := e.metaOf(stat.EphemeralOwner)
	return Participant{
		ID:           string(data),
		Advertise:    m.Advertise,
		Proxy:        m.Proxy,
		Node:         name,
		Session:      stat.EphemeralOwner,
		FencingToken: stat.Czxid + e.cfg.FencingOffset,
	}
}

// nodeToken reads the fencing token of one of our nodes, for log lines (a
// create does not return the node's stat); 0 when the read fails.
func (e *Elector) nodeToken(name string) int64 {
	e.nReads.Add(1)
	ok, stat, err := e.zk.Exists(join(e.cfg.Path, name))
	if err != nil || !ok {
		return 0
	}
	return stat.Czxid + e.cfg.FencingOffset
}

// metaPath holds one ephemeral node per electd session, named by the session
// id, with the participant's id and advertise data (metaData, JSON). It sits
// beside (not inside) the election path so Curator clients sharing the
// election never see it, and the election node's data stays the bare id.
// It is also how race followers, which own no election node, are listed.
func (e *Elector) metaPath() string { return e.cfg.Path + ".advertise" }

// metaData is the content of a node under metaPath. Proxy is left out
// when empty, so a participant without a proxy writes what older electd
// versions wrote; they ignore the field when it is there.
type metaData struct {
	ID        string `json:"id"`
	Advertise string `json:"advertise"`
	Proxy     string `json:"proxy,omitempty"`
}

// parseMeta reads a metaPath node; a bare string is taken as advertise data.
func parseMeta(b []byte) metaData {
	var m metaData
	if len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &m) == nil {
		return m
	}
	return metaData{Advertise: string(b)}
}

// publishMeta creates this session's meta node once per session.
func (e *Elector) publishMeta() error {
	l := &e.loop
	if l.metaSID == l.sid {
		return nil
	}
	mp := e.metaPath()
	if err := e.ensureParents(mp); err != nil {
		return err
	}
	own := metaData{ID: e.cfg.ID, Advertise: e.cfg.Advertise, Proxy: e.cfg.Proxy}
	data, _ := json.Marshal(own)
	e.nWrites.Add(1)
	_, err := e.zk.Create(join(mp, sessionHex(l.sid)), data, zk.FlagEphemeral, e.s.acl)
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		if errors.Is(err, zk.ErrNoAuth) {
			e.refused(mp, err)
		}
		return fmt.Errorf("publish advertise: %w", err)
	}
	l.metaSID = l.sid
	// Our own advertise data is known: claiming leadership (takeLead) then
	// reads nothing more than the queue.
	e.adv.put(l.sid, own)
	return nil
}

// advertised caches meta data by session: it never changes for the life
// of a session. Run's goroutine and Participants' both use it.
type advertised struct {
	mu sync.Mutex
	m  map[int64]metaData
}

const advertisedMax = 1024

func (a *advertised) get(session int64) (metaData, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m, ok := a.m[session]
	return m, ok
}

func (a *advertised) put(session int64, m metaData) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil || len(a.m) >= advertisedMax {
		a.m = map[int64]metaData{} // sessions come and go: start over rather than grow
	}
	a.m[session] = m
}

// metaOf returns a session's meta data (advertise, proxy), read once per
// session.
func (e *Elector) metaOf(session int64) metaData {
	if session == 0 {
		return metaData{}
	}
	if m, ok := e.adv.get(session); ok {
		return m
	}
	e.nReads.Add(1)
	data, _, err := e.zk.Get(join(e.metaPath(), sessionHex(session)))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return metaData{} // not cached: try again next time
	}
	m := parseMeta(data)
	e.adv.put(session, m)
	return m
}
