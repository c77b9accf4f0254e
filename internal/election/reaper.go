package election

import (
	"errors"
	"path"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// orphans is what leave could not delete before its deadline: a create whose
// reply was lost, or a node whose delete failed while disconnected. The
// elector is finished by then, but the session may live on and with it the
// ephemerals, which would sit in the queue as a participant nobody runs
// (CURATOR-18, -45, -79). Curator deletes such nodes in the background once
// the connection is back; so do we.
type orphans struct {
	sid   int64
	dir   string          // election path
	ids   map[string]bool // protected ids: any child carrying one is ours
	names []string        // full paths owned by sid
}

func (o orphans) empty() bool { return len(o.ids) == 0 && len(o.names) == 0 }

// reapRetry paces the reaper while the connection is down or deletes fail.
const reapRetry = 200 * time.Millisecond

// reap deletes o's nodes in the background: it runs while o's session is
// alive and stops once they are gone, the session changed (the server
// removed them) or the Session is closed (likewise).
func reap(s SessionHandle, o orphans) {
	if o.sid == 0 || o.empty() {
		return
	}
	s.Spawn(func() {
		ch, cancel := s.Subscribe()
		defer cancel()
		for {
			st, sid, _ := s.Snapshot()
			switch {
			case st == zksession.StateClosed, st == zksession.StateConnected && sid != o.sid:
				return
			case st == zksession.StateConnected:
				if reapOnce(s, &o) {
					return
				}
			}
			retry, stop := clock.Deadline(s.Clock(), reapRetry)
			select {
			case <-s.Done():
				stop()
				return
			case <-ch:
			case <-retry:
			}
			stop()
		}
	})
}

// reapOnce tries each orphan once and reports whether none is left.
func reapOnce(s SessionHandle, o *orphans) bool {
	var left []string
	for _, p := range o.names {
		if !deleteOwned(s, p, o.sid) {
			left = append(left, p)
		}
	}
	o.names = left
	if len(o.ids) > 0 {
		kids, _, err := s.Conn().Children(o.dir)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			o.ids = nil
		case err != nil:
			return false
		default:
			done := true
			for _, k := range kids {
				if id := protectedID(k); id != "" && o.ids[id] && !deleteOwned(s, nodePath(o.dir, k), o.sid) {
					done = false
				}
			}
			if done {
				o.ids = nil
			}
		}
	}
	return o.empty()
}

// deleteOwned deletes p if sid owns it; true when it is gone or not ours.
func deleteOwned(s SessionHandle, p string, sid int64) bool {
	ok, stat, err := s.Conn().Exists(p)
	if err != nil {
		return false
	}
	if !ok || stat.EphemeralOwner != sid {
		return true
	}
	err = s.Conn().Delete(p, -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return false
	}
	s.Logger().Info("deleted orphan node", "node", path.Base(p), "session", sessionHex(sid))
	return true
}
