package election

import "sync"

// The watches an Elector has set (docs/design/election-and-lease.md, "Watches"). go-zookeeper
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

// watchSet is the Elector's set watches. Run's goroutine adds and re-points
// them; each one's goroutine removes it as it fires, under mu, so a watch
// is either still set (and will post the subscriptions it has then) or
// gone (and the step sets a new one).
type watchSet struct {
	mu sync.Mutex
	m  map[watchKey]*watchEntry
}

// watchEntry is one watch set: the events it posts when it fires, one per
// kind of watch the recipe asked for on that path.
type watchEntry struct {
	subs map[eventKind]event
}

// claim re-points the watch set on k, if there is one, at ev (for its
// kind), and reports whether there was.
func (w *watchSet) claim(k watchKey, ev event) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ent, ok := w.m[k]
	if ok {
		ent.subs[ev.kind] = ev
	}
	return ok
}

// add records a watch just set on k.
func (w *watchSet) add(k watchKey, ev event) *watchEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[watchKey]*watchEntry{}
	}
	ent := &watchEntry{subs: map[eventKind]event{ev.kind: ev}}
	w.m[k] = ent
	return ent
}

// take removes ent, the watch on k, as it fires and returns what it meant.
func (w *watchSet) take(k watchKey, ent *watchEntry) map[eventKind]event {
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
