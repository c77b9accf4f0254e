package election

import (
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The watched reads of the recipe's host (seam.go), over the watchSet
// (watchset.go): docs/design/election-and-lease.md, "Watches".

// getW reads p and makes sure a data watch on it posts ev: a GetW, unless
// one is set already. A missing node sets no watch.
func (e *Elector) getW(p string, ev event) ([]byte, *zk.Stat, error) {
	e.nReads.Add(1)
	k := watchKey{p, watchData}
	if e.ws.claim(k, ev) {
		return e.zk.Get(p)
	}
	data, stat, ch, err := e.zk.GetW(p)
	if err == nil {
		e.forward(ch, k, ev)
	}
	return data, stat, err
}

// childrenW lists p and makes sure a child watch on it posts ev.
func (e *Elector) childrenW(p string, ev event) ([]string, error) {
	e.nReads.Add(1)
	k := watchKey{p, watchChild}
	if e.ws.claim(k, ev) {
		kids, stat, err := e.zk.Children(p)
		e.listed(p, stat, err)
		return kids, err
	}
	kids, stat, ch, err := e.zk.ChildrenW(p)
	if err == nil {
		e.forward(ch, k, ev)
	}
	e.listed(p, stat, err)
	return kids, err
}

// existsW says whether p exists and makes sure a watch posts ev when it is
// created, changed or deleted. Either type of watch set already will do:
// the change that would make it the wrong type fires it.
func (e *Elector) existsW(p string, ev event) (bool, error) {
	e.nReads.Add(1)
	if e.ws.claim(watchKey{p, watchData}, ev) || e.ws.claim(watchKey{p, watchExist}, ev) {
		ok, _, err := e.zk.Exists(p)
		return ok, err
	}
	ok, _, ch, err := e.zk.ExistsW(p)
	if err == nil {
		typ := watchExist
		if ok {
			typ = watchData
		}
		e.forward(ch, watchKey{p, typ}, ev)
	}
	return ok, err
}

// forward records a watch just set and starts the one goroutine that waits
// for it. The goroutine ends when the watch fires (go-zookeeper also fires
// every watch with EventNotWatching when the session expires or the
// connection is closed) or when the Elector stops; a firing that no longer
// matters is dropped by the recipe (core.stale).
func (e *Elector) forward(ch <-chan zk.Event, k watchKey, ev event) {
	ent := e.ws.add(k, ev)
	go func() {
		var fired zk.Event
		select {
		case fired = <-ch:
		case <-e.done:
			return
		}
		for _, ev := range e.ws.take(k, ent) {
			e.log.Debug("watch fired", "watch", ev.kind.String(), "node", ev.node, "event", fired.Type.String())
			if ev.kind == evOwn && fired.Type == zk.EventNodeDeleted {
				e.ownGone(ev.node)
			}
			ev.zk = fired
			select {
			case e.events <- ev:
			case <-e.done:
				return
			}
		}
	}()
}

// ownGone stops leading at once when the own node is deleted under us (by
// an operator, or a hostile client on an open path). It runs on the watch's
// goroutine, not Run's: Run may be busy with a re-check of its own, and the
// successor, notified at the same moment, claims after one round-trip
// (TestZKHostileClient saw both lead for a few milliseconds while the old
// leader's loop read the queue). Without its node this participant does
// not lead; the recipe's re-check then drops the node and rejoins.
func (e *Elector) ownGone(node string) {
	e.publish(func(v *view) {
		if v.holding(node) {
			v.holds, v.lossHint = false, LossExpired
		}
	})
}
