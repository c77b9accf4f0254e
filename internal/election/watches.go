package election

import (
	"sync"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The watches an Elector has set (docs/DESIGN.md, "Watches"). go-zookeeper
// keeps every channel a *W request returns until its watch fires (or the
// session ends), and re-sets each one after a reconnect. Setting a watch
// on a path that already has one therefore adds a channel, a goroutine
// waiting on it and an entry re-sent after every reconnect, each of which
// lives until the node changes, which for a leader's own queue may be
// never. So the Elector sets at most one watch per (path, type): a step
// that needs a watch where one is already set reads without a watch and
// re-points the set one at what it now means.

// watchType mirrors go-zookeeper's: a child watch (ChildrenW), a data
// watch (GetW, or ExistsW on a node that exists) and an exist watch
// (ExistsW on a node that does not).
type watchType int

const (
	watchData watchType = iota
	watchExist
	watchChild
)

type watchKey struct {
	path string
	typ  watchType
}

// watchSub is what a watch means to the loop: the event it posts.
type watchSub struct {
	gen  uint64
	node string
}

// watchSet is the Elector's set watches. Run's goroutine adds and re-points
// them; each one's goroutine removes it as it fires, under mu, so a watch
// is either still set (and will post the subscriptions it has then) or
// gone (and the step sets a new one).
type watchSet struct {
	mu sync.Mutex
	m  map[watchKey]*watchEntry
}

// watchEntry is one watch set: the events it posts when it fires, one per
// kind of watch the loop asked for on that path.
type watchEntry struct {
	subs map[eventKind]watchSub
}

// claim re-points the watch set on k, if there is one, at kind's
// subscription sub, and reports whether there was.
func (w *watchSet) claim(k watchKey, kind eventKind, sub watchSub) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ent, ok := w.m[k]
	if ok {
		ent.subs[kind] = sub
	}
	return ok
}

// add records a watch just set on k.
func (w *watchSet) add(k watchKey, kind eventKind, sub watchSub) *watchEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[watchKey]*watchEntry{}
	}
	ent := &watchEntry{subs: map[eventKind]watchSub{kind: sub}}
	w.m[k] = ent
	return ent
}

// take removes ent, the watch on k, as it fires and returns what it meant.
func (w *watchSet) take(k watchKey, ent *watchEntry) map[eventKind]watchSub {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m[k] == ent {
		delete(w.m, k)
	}
	return ent.subs
}

// reset forgets every watch: the session they were set in has ended, and
// go-zookeeper has fired them all with EventNotWatching before the next
// session is announced. Their goroutines still post what they meant, for
// a generation the new session has made stale.
func (w *watchSet) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m = nil
}

// count is the number of watches set.
func (w *watchSet) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

// getW reads p and makes sure a data watch on it posts kind for node: a
// GetW, unless one is set already. A missing node sets no watch.
func (e *Elector) getW(p string, kind eventKind, node string) ([]byte, *zk.Stat, error) {
	e.nReads.Add(1)
	k, sub := watchKey{p, watchData}, e.sub(node)
	if e.ws.claim(k, kind, sub) {
		return e.zk.Get(p)
	}
	data, stat, ch, err := e.zk.GetW(p)
	if err == nil {
		e.forward(ch, k, kind, sub)
	}
	return data, stat, err
}

// childrenW lists p and makes sure a child watch on it posts kind for node.
func (e *Elector) childrenW(p string, kind eventKind, node string) ([]string, error) {
	e.nReads.Add(1)
	k, sub := watchKey{p, watchChild}, e.sub(node)
	if e.ws.claim(k, kind, sub) {
		kids, _, err := e.zk.Children(p)
		return kids, err
	}
	kids, _, ch, err := e.zk.ChildrenW(p)
	if err == nil {
		e.forward(ch, k, kind, sub)
	}
	return kids, err
}

// existsW says whether p exists and makes sure a watch posts kind for node
// when it is created, changed or deleted. Either type of watch set already
// will do: the change that would make it the wrong type fires it.
func (e *Elector) existsW(p string, kind eventKind, node string) (bool, error) {
	e.nReads.Add(1)
	sub := e.sub(node)
	if e.ws.claim(watchKey{p, watchData}, kind, sub) || e.ws.claim(watchKey{p, watchExist}, kind, sub) {
		ok, _, err := e.zk.Exists(p)
		return ok, err
	}
	ok, _, ch, err := e.zk.ExistsW(p)
	if err == nil {
		typ := watchExist
		if ok {
			typ = watchData
		}
		e.forward(ch, watchKey{p, typ}, kind, sub)
	}
	return ok, err
}

func (e *Elector) sub(node string) watchSub { return watchSub{gen: e.loop.gen, node: node} }

// forward records a watch just set and starts the one goroutine that waits
// for it. The goroutine ends when the watch fires (go-zookeeper also fires
// every watch with EventNotWatching when the session expires or the
// connection is closed) or when the Elector stops; a firing that no longer
// matters is dropped by the loop (stale).
func (e *Elector) forward(ch <-chan zk.Event, k watchKey, kind eventKind, sub watchSub) {
	ent := e.ws.add(k, kind, sub)
	go func() {
		var ev zk.Event
		select {
		case ev = <-ch:
		case <-e.done:
			return
		}
		for kind, sub := range e.ws.take(k, ent) {
			e.log.Debug("watch fired", "watch", kind.String(), "node", sub.node, "event", ev.Type.String())
			if kind == evOwn && ev.Type == zk.EventNodeDeleted {
				e.ownGone(sub.node)
			}
			select {
			case e.events <- event{kind: kind, gen: sub.gen, node: sub.node, zk: ev}:
			case <-e.done:
				return
			}
		}
	}()
}
