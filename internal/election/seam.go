package election

import (
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// recipeHost is the seam between a recipe and the Elector that runs it, as
// client-go's elector works over resourcelock.Interface: a recipe decides,
// in ZooKeeper requests, who leads; the host makes those requests on its
// session, hands the recipe what its watches and timers say (recipe.handle)
// and publishes what the recipe found as the view behind Status. A recipe
// reaches nothing else of the Elector: not its loop, its lock nor its
// fields. The Elector implements it; the recipes' unit tests use a fake
// (docs/design/election-and-lease.md, "Election modes").
type recipeHost interface {
	// ZooKeeper requests on the session, each counted (Counters.Reads,
	// Writes). recheck lists the children to decide whether this
	// participant leads, and is counted as a re-check instead.
	get(p string) ([]byte, *zk.Stat, error)
	exists(p string) (bool, *zk.Stat, error)
	children(p string) ([]string, error)
	recheck(p string) ([]string, error)
	create(p string, data []byte, flags int32) (string, error) // with the session's ACL
	delete(p string) error

	// Watched reads: as get, children and exists, and ev comes back to the
	// recipe's handle when p changes (or the watch ends). The host sets at
	// most one watch per path and type (docs/design/election-and-lease.md, "Watches"). A
	// watch on the own node (evOwn) that sees it deleted also ends
	// leadership in the view at once, before the recipe hears of it.
	getW(p string, ev event) ([]byte, *zk.Stat, error)
	childrenW(p string, ev event) ([]string, error)
	existsW(p string, ev event) (bool, error)
	// after hands ev to the recipe's handle once d has passed.
	after(d time.Duration, ev event) clock.Timer

	// The session's share of the election, done once per session:
	// preparePath checks the path's ACL and creates it and its parents,
	// publishMeta creates the session's meta node (docs/design/election-and-lease.md, "Node
	// layout"); pathGone says the path vanished, to be made again. meta is
	// a session's meta data, read once per session, from any goroutine.
	preparePath() error
	publishMeta() error
	pathGone()
	meta(session int64) metaData
	// reidentify reads the path's node again: its czxid names the
	// election's incarnation (identity.go). Children reads of the path do
	// it at no cost; the race calls it where it sees a new leader node
	// without listing the path.
	reidentify()

	// The view: publish changes it (and wakes Observe's publisher), viewed
	// is a copy, leads is Status().IsLeader (the view judged against the
	// lease at this instant), refuse records why this participant cannot
	// stand and logs it once.
	publish(change func(v *view))
	viewed() view
	leads() bool
	refuse(msg string, attrs ...any)

	// The lease (docs/design/election-and-lease.md, "The lease"): wantLease says whether this
	// participant may lead soon (it leads, or is next in line), and
	// ensureLease renews it now when it has lapsed, before leading.
	wantLease(want bool)
	ensureLease()
}

// zkReader is the connection's read side, for a recipe's participants,
// which reads from the caller's goroutine and is not counted.
type zkReader interface {
	Get(path string) ([]byte, *zk.Stat, error)
	Children(path string) ([]string, *zk.Stat, error)
}

// view is what the election knows, published by the recipe (through
// recipeHost.publish) and by the Elector, and judged by Status at call time.
type view struct {
	joined        bool
	node          string
	nodeSession   int64
	token         int64
	ownToken      int64 // own node's fencing token, for log lines; 0 when unknown
	holds         bool  // own node verified lowest and owned by the live session
	claimedAt     time.Time
	leader        *Participant
	participants  int
	observedAt    time.Time
	misconfigured string
	refused       string     // why ZooKeeper refused our writes, until one succeeds
	duplicate     string     // why another live session's claim on our id keeps us out (claimID)
	lossHint      LossReason // why the next loss happens, set just before it
	standing      bool       // a candidate (SetCandidate)
	withdrawn     LossReason // why not standing
}

// holding reports whether v says this participant leads with node.
func (v *view) holding(node string) bool { return v.holds && v.node == node }

// event is what a watch or timer tells a recipe: which one (kind), the
// watches' generation it was set in (a recipe drops it when that has moved
// on), the node it is about, and ZooKeeper's event for a watch.
type event struct {
	kind eventKind
	gen  uint64
	node string
	zk   zk.Event
}

type eventKind int

const (
	evPred       eventKind = iota // predecessor changed or vanished
	evLeader                      // the leader node we watch changed or vanished
	evOwn                         // our own node changed or vanished
	evChildren                    // selector leader alone at term end: someone joined
	evTerm                        // selector term ended
	evTimer                       // hold-off over, retry
	evMembers                     // queue leader: a node joined or left the path
	evMembersDue                  // queue leader: time to read the changed queue
)

// String names a watch's kind in debug lines.
func (k eventKind) String() string {
	names := [...]string{"predecessor", "leader", "own", "children", "term", "timer", "members", "members-due"}
	if int(k) < len(names) {
		return names[k]
	}
	return "unknown"
}
