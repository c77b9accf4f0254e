package election

import (
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The Elector as its recipe's host (seam.go): the ZooKeeper requests,
// counted; the timers; the lease. The watched reads are in watches.go,
// the session's share of the path in paths.go, the view in elector.go.

var _ recipeHost = (*Elector)(nil)

func (e *Elector) get(p string) ([]byte, *zk.Stat, error) {
	e.nReads.Add(1)
	return e.zk.Get(p)
}

func (e *Elector) exists(p string) (bool, *zk.Stat, error) {
	e.nReads.Add(1)
	return e.zk.Exists(p)
}

func (e *Elector) children(p string) ([]string, error) {
	e.nReads.Add(1)
	kids, stat, err := e.zk.Children(p)
	e.listed(p, stat, err)
	return kids, err
}

func (e *Elector) recheck(p string) ([]string, error) {
	e.nChecks.Add(1)
	kids, stat, err := e.zk.Children(p)
	e.listed(p, stat, err)
	return kids, err
}

// listed takes the election's identity from a children read of the path,
// which returns the path's Stat (identity.go).
func (e *Elector) listed(p string, stat *zk.Stat, err error) {
	if err == nil && stat != nil && p == e.cfg.Path {
		e.sawPath(stat)
	}
}

// identify reads the election path's node once per session while its
// identity is unknown (an observer may start before any candidate has
// created the path: a later read of the path names it).
func (e *Elector) identify() {
	l := &e.loop
	if l.identified == l.sid {
		return
	}
	ok, stat, err := e.exists(e.cfg.Path)
	if err != nil || !ok {
		return
	}
	l.identified = l.sid
	e.sawPath(stat)
}

// reidentify reads the path's node again, for a recipe that may see a new
// incarnation without listing the path. A missing path keeps the identity
// last read: no leader can be in it.
func (e *Elector) reidentify() {
	if ok, stat, err := e.exists(e.cfg.Path); err == nil && ok {
		e.sawPath(stat)
	}
}

func (e *Elector) create(p string, data []byte, flags int32) (string, error) {
	e.nWrites.Add(1)
	return e.zk.Create(p, data, flags, e.acl)
}

func (e *Elector) delete(p string) error {
	e.nWrites.Add(1)
	return e.zk.Delete(p, -1)
}

// after posts ev to Run's loop after d.
func (e *Elector) after(d time.Duration, ev event) clock.Timer {
	return e.clock.AfterFunc(d, func() {
		select {
		case e.events <- ev:
		case <-e.done:
		}
	})
}

// wantLease says whether this participant may lead soon (it leads, or is
// next in line) and so needs the Session to keep the lease renewed.
func (e *Elector) wantLease(want bool) {
	if e.loop.leasing != want {
		e.loop.leasing = want
		e.s.NeedLease(want)
	}
}

// ensureLease renews the lease now, when it has lapsed, before this
// participant starts leading: a participant that was not renewing (it was
// not next in line, or just won a race) must not wait a renewal interval to
// answer 200. A failure leaves the lease lapsed: Status says so until the
// renewal loop succeeds.
func (e *Elector) ensureLease() {
	e.wantLease(true)
	if e.s.LeaseRemaining() > 0 {
		return
	}
	if _, err := e.s.Renew(); err != nil {
		e.log.Debug("could not renew the lease before leading", "err", err)
	}
}
