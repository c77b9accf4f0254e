package election

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The meta node every electd session publishes, and the meta data read
// from others' (docs/design/election-and-lease.md, "Node layout").

// publishMeta creates this session's meta node once per session, after
// claiming the session's id (claimID): a participant whose id another live
// session holds publishes nothing and does not join.
func (e *Elector) publishMeta() error {
	l := &e.loop
	if l.metaSID == l.sid {
		return nil
	}
	if err := e.claimID(); err != nil {
		return err
	}
	mp := metaPath(e.cfg.Path)
	if err := e.ensureParents(mp); err != nil {
		return err
	}
	own, up := e.ownMeta()
	data, _ := json.Marshal(own)
	_, err := e.create(metaNode(e.cfg.Path, l.sid), data, zk.FlagEphemeral)
	if errors.Is(err, zk.ErrNodeExists) {
		// Ours already: a lost reply, or a resumed session whose previous
		// process may have said otherwise.
		e.nWrites.Add(1)
		_, err = e.zk.Set(metaNode(e.cfg.Path, l.sid), data, -1)
	}
	if err != nil {
		if errors.Is(err, zk.ErrNoAuth) {
			e.refuse(e.noPermission(mp, err), "node", mp, "err", err)
		}
		return fmt.Errorf("publish advertise: %w", err)
	}
	l.metaSID, l.metaUp = l.sid, up
	// Our own advertise data is known: claiming leadership then reads
	// nothing more than the queue.
	e.adv.put(l.sid, own)
	return nil
}

// ownMeta is this participant's meta data, and whether its application
// is up (SetAppUp).
func (e *Elector) ownMeta() (metaData, bool) {
	m := metaData{ID: e.cfg.ID, Advertise: e.cfg.Advertise, Proxy: e.cfg.Proxy}
	up := e.appUp.Load()
	if e.cfg.AppChecked {
		m.AppUp = &up
	}
	return m, up
}

// syncMeta rewrites this session's meta node when the application's state
// changed since it was written (Config.AppChecked, SetAppUp): one write
// per change, none at rest.
func (e *Elector) syncMeta() error {
	l := &e.loop
	if !e.cfg.AppChecked || l.metaSID != l.sid || l.sid == 0 {
		return nil
	}
	own, up := e.ownMeta()
	if up == l.metaUp {
		return nil
	}
	data, _ := json.Marshal(own)
	e.nWrites.Add(1)
	if _, err := e.zk.Set(metaNode(e.cfg.Path, l.sid), data, -1); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			l.metaSID = 0 // gone: the next join publishes it again
			return nil
		}
		return fmt.Errorf("publish the application's state: %w", err)
	}
	l.metaUp = up
	e.adv.put(l.sid, own)
	e.log.Debug("published the application's state", "app_up", up)
	return nil
}

// meta returns a session's meta data (advertise, proxy), read once per
// session; safe from any goroutine.
func (e *Elector) meta(session int64) metaData {
	if session == 0 {
		return metaData{}
	}
	if m, ok := e.adv.get(session); ok {
		return m
	}
	data, _, err := e.get(metaNode(e.cfg.Path, session))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return metaData{} // not cached: try again next time
	}
	m := parseMeta(data)
	e.adv.put(session, m)
	return m
}
