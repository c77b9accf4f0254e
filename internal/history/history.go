// Package history keeps the last transitions of one participant's election
// in memory, for GET /history (docs/design/http-contract.md, "HTTP API").
// It records who led with which fencing token and when this participant
// was elected or revoked. It also records changes of its connection state,
// session or candidacy.
//
// A Log is fed the statuses of (*election.Elector).Observe. Observe may
// skip statuses for a slow reader, so the log holds only the transitions
// between the statuses it got. A leader that came and went between two of
// them is not in it. The log holds at most its size in entries and drops
// the oldest first, so its memory is bounded.
package history

import (
	"sync"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
)

// DefaultSize is the number of entries a Log keeps unless told otherwise.
const DefaultSize = 100

// Kind is what a transition was.
type Kind string

const (
	// Elected: this participant began to lead.
	Elected Kind = "elected"
	// Revoked: this participant stopped leading; the entry's token is the
	// one of the leadership it lost.
	Revoked Kind = "revoked"
	// Leader: the leader this participant sees changed (or is no longer
	// known).
	Leader Kind = "leader"
	// State: this participant's connection state, session, candidacy or
	// reason changed; the first entry of a Log is one.
	State Kind = "state"
)

// Entry is one transition.
type Entry struct {
	// Seq numbers the entries of a Log from 1. A reader tells new entries
	// from seen ones by it, even after old ones were dropped.
	Seq  uint64
	Time time.Time
	Kind Kind
	// LeaderID is the leader's id after the transition; "" with HasLeader
	// false when no leader is known.
	LeaderID  string
	HasLeader bool
	// FencingToken is the token of the leadership the entry is about. That
	// is the one lost (Revoked), won (Elected), or the leader's (Leader,
	// State). Meaningful only when HasToken.
	FencingToken int64
	HasToken     bool
	// Reason is this participant's reason after the transition
	// (election.Status.Reason), e.g. "following web-1" or "lease expired".
	Reason    string
	State     zksession.State
	Candidate bool
	Session   int64 // this participant's session id; 0 before the first
}

// Log is a bounded record of transitions. Its methods are safe for
// concurrent use.
type Log struct {
	clock clock.Clock

	mu      sync.Mutex
	ring    []Entry // ring[(start+i)%len(ring)], i < n, oldest first
	start   int
	n       int
	seq     uint64
	prev    election.Status
	started bool
}

// New returns a Log of at most size entries (DefaultSize when size < 1)
// that timestamps entries with now.
func New(size int, clk clock.Clock) *Log {
	if size < 1 {
		size = DefaultSize
	}
	return &Log{clock: clk, ring: make([]Entry, size)}
}

// Feed adds every status received from ch until ch is closed. ch is
// typically from (*election.Elector).Observe, which closes it when its ctx
// ends or the elector stops.
func (l *Log) Feed(ch <-chan election.Status) {
	for st := range ch {
		l.Add(st)
	}
}

// Add records the transitions from the last status added to st. The first
// status added is recorded as a State entry, and a Leader entry when it
// knows a leader.
func (l *Log) Add(st election.Status) {
	at := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	prev, started := l.prev, l.started
	l.prev, l.started = st, true
	if !started {
		l.push(newEntry(at, State, st, st))
		if st.Leader != nil {
			l.push(newEntry(at, Leader, st, st))
		}
		return
	}
	for _, k := range Transitions(prev, st) {
		l.push(newEntry(at, k, prev, st))
	}
}

// Last returns the newest n entries, oldest first. It returns all of them
// when n < 1 or n exceeds what the log holds.
func (l *Log) Last(n int) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 1 || n > l.n {
		n = l.n
	}
	out := make([]Entry, n)
	for i := range out {
		out[i] = l.ring[(l.start+l.n-n+i)%len(l.ring)]
	}
	return out
}

// Size is the most entries the log keeps.
func (l *Log) Size() int { return len(l.ring) }

func (l *Log) push(e Entry) {
	l.seq++
	e.Seq = l.seq
	if l.n < len(l.ring) {
		l.ring[(l.start+l.n)%len(l.ring)] = e
		l.n++
		return
	}
	l.ring[l.start] = e // the oldest goes
	l.start = (l.start + 1) % len(l.ring)
}

// Transitions lists what changed from prev to st, in recording order. The
// order is: a leadership lost, the new leader, a leadership won, then any
// other change of this participant (State). A change of reason alone is a
// State entry only when nothing else explains it.
func Transitions(prev, st election.Status) []Kind {
	var out []Kind
	if prev.IsLeader && !st.IsLeader {
		out = append(out, Revoked)
	}
	if leaderChanged(prev.Leader, st.Leader) {
		out = append(out, Leader)
	}
	if !prev.IsLeader && st.IsLeader {
		out = append(out, Elected)
	}
	switch {
	case prev.State != st.State, prev.SessionID != st.SessionID, prev.Candidate != st.Candidate,
		prev.Misconfigured != st.Misconfigured:
		out = append(out, State)
	case len(out) == 0 && prev.Why != st.Why:
		out = append(out, State)
	}
	return out
}

// leaderChanged compares leaders as the election does: by node, session and
// id. An advertise address published late is not a new leader.
func leaderChanged(a, b *election.Participant) bool {
	if a == nil || b == nil {
		return (a == nil) != (b == nil)
	}
	return a.ID != b.ID || a.Node != b.Node || a.Session != b.Session
}

// newEntry describes the transition of kind k from prev to st.
func newEntry(at time.Time, k Kind, prev, st election.Status) Entry {
	e := Entry{
		Time:      at,
		Kind:      k,
		Reason:    st.Reason,
		State:     st.State,
		Candidate: st.Candidate,
		Session:   st.SessionID,
	}
	if l := st.Leader; l != nil {
		e.LeaderID, e.HasLeader = l.ID, true
		e.FencingToken, e.HasToken = l.FencingToken, true
	}
	switch k {
	case Revoked:
		e.FencingToken, e.HasToken = prev.FencingToken, true
	case Elected:
		e.FencingToken, e.HasToken = st.FencingToken, true
	}
	return e
}
