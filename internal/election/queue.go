package election

import (
	"errors"
	"fmt"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// queueRecipe is Curator's LeaderLatch (latch) and LeaderSelector with
// auto-requeue (selector): a protected EPHEMERAL_SEQUENTIAL node per
// participant, the lowest leads, each follower watches its predecessor only
// and, separately, the leader (docs/design/election-and-lease.md, "Election modes", "A queue
// participant's life"). It runs over a host (seam.go) and nothing else:
// queue_recipe.go is its loop step, queue_join.go the join,
// queue_follow.go a follower's watches, queue_members.go the leader's view
// of the queue, queue_switchover.go the hand-overs to a chosen participant.
type queueRecipe struct {
	*core
	tag string // latchTag or lockTag

	uuid      string   // protected id of the own node
	firstLook bool     // first re-check after a create: check duplicate ids
	queue     []string // sorted queue up to and including our predecessor
	roster    roster   // the leader's view of the queue (queue_members.go)
	leaderIdx int      // index in queue of the leader we watch
	termDue   bool     // selector: the term ended; re-queue at the next step
	termNode  string   // selector: the node the term timer was armed for

	// ignored holds children that are not participants and never lead,
	// with why: a malformed name, or not ephemeral (no session owns it).
	// Only children that still exist are kept.
	ignored map[string]string
}

// queueOf orders kids into the queue (Curator's order, index 0 leads),
// leaving out children that are not participants, reported once each.
func (q *queueRecipe) queueOf(kids []string) []string {
	out := make([]string, 0, len(kids))
	for _, k := range kids {
		switch {
		case !isQueueNode(k, q.tag):
			q.ignore(k, "its name does not end in "+q.tag+"<10-digit sequence>")
		case q.ignored[k] == "":
			out = append(out, k)
		}
	}
	return sortQueue(out, q.tag)
}

// ignore reports a child that is not a participant, once.
func (q *queueRecipe) ignore(name, why string) {
	if q.ignored[name] != "" {
		return
	}
	q.ignored[name] = why
	q.log.Warn("ignoring a node that is not a participant: it never leads", "node", name, "why", why)
}

// notEphemeral reports (and ignores from now on) a node no session owns:
// only a participant's ephemeral node may lead.
func (q *queueRecipe) notEphemeral(name string, stat *zk.Stat) bool {
	if stat.EphemeralOwner != 0 {
		return false
	}
	q.ignore(name, "it is not ephemeral: no session owns it")
	return true
}

// forgetGone drops ignored children that no longer exist.
func (q *queueRecipe) forgetGone(kids []string) {
	if len(q.ignored) == 0 {
		return
	}
	present := make(map[string]bool, len(kids))
	for _, k := range kids {
		present[k] = true
	}
	for k := range q.ignored {
		if !present[k] {
			delete(q.ignored, k)
		}
	}
}

// forgot drops what the recipe knew about its own node (core.forget): its
// protected id joins the orphans to delete on sight.
func (q *queueRecipe) forgot() {
	if q.uuid != "" {
		q.old[q.uuid] = true
	}
	q.uuid, q.queue, q.termDue = "", nil, false
	q.roster.queue = nil // leading no more
}

// participants reads the queue, in order, with conn from the caller's
// goroutine. On a path that also holds nodes of the other recipe
// (misconfigured), each recipe's lowest node is marked leader: that is who
// its own Curator clients follow.
func (q *queueRecipe) participants(conn zkReader) ([]Participant, error) {
	kids, _, err := conn.Children(q.cfg.Path)
	if errors.Is(err, zk.ErrNoNode) {
		return []Participant{}, nil // CURATOR-436: no path, no leader
	}
	if err != nil {
		return nil, fmt.Errorf("election: list participants: %w", err)
	}
	out := make([]Participant, 0, len(kids))
	led := map[string]bool{}
	for _, name := range sortBySequence(kids) {
		tag := queueTag(name)
		if tag == "" {
			continue // not a participant (see queueOf)
		}
		data, stat, err := conn.Get(nodePath(q.cfg.Path, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // CURATOR-358: gone while we read
		}
		if err != nil {
			return nil, fmt.Errorf("election: read participant %s: %w", name, err)
		}
		if stat.EphemeralOwner == 0 {
			continue // not a participant: never leads
		}
		p := q.participant(name, data, stat)
		p.IsLeader = !led[tag]
		led[tag] = true
		out = append(out, p)
	}
	return out, nil
}

// roster is the queue leader's view of the queue. Followers watch only
// their predecessor, so the leader alone watches the path's children: to
// notice a node of another recipe sorting before ours (Curator sorts by its
// own tag; such a path must make us step down as misconfigured), to keep the
// participant count exact, to read each newcomer's id once and count
// duplicate ids, and to know, when it leaves, who joined last and may take
// over (handOff). One watch on one participant: no herd.
type roster struct {
	armed    bool              // a delayed read is scheduled
	due      bool              // the delay is over: read the children now
	queue    []string          // the queue at the last read, this leader first
	ids      map[string]string // node name -> id, for participant nodes read
	sessions map[string]int64  // node name -> its session, for those nodes
	joined   map[int64]int64   // session -> its meta node's czxid; 0: none (a Curator peer)
	dups     map[string]bool   // ids reported as duplicated, while they are
}

func newRoster() roster {
	return roster{ids: map[string]string{}, sessions: map[string]int64{}, joined: map[int64]int64{},
		dups: map[string]bool{}}
}

// prune forgets the nodes that are not in sorted any more, and the
// sessions none of the others belongs to.
func (m *roster) prune(sorted []string) {
	present := make(map[string]bool, len(sorted))
	for _, name := range sorted {
		present[name] = true
	}
	live := map[int64]bool{}
	for name := range m.ids {
		if !present[name] {
			delete(m.ids, name)
			delete(m.sessions, name)
			continue
		}
		live[m.sessions[name]] = true
	}
	for sid := range m.joined {
		if !live[sid] {
			delete(m.joined, sid)
		}
	}
}

// candidate is a participant as the leader's roster knows it: a leaving
// leader may hand over to it (handOff).
type candidate struct {
	node, id string
	session  int64
	joined   int64 // its session's meta node's czxid; 0 without one
}
