package election

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// core is what both recipes keep about this participant's place in the
// election, and the small steps they share over the host: its own node, a
// create whose reply was lost, the protected ids it gave up, and the
// generation of the watches it set. A recipe embeds one; the Elector's
// loop reaches it only through the recipe (elector.go). own.go holds the
// steps that take and give up the own node.
type core struct {
	h     recipeHost
	cfg   Config
	log   *slog.Logger
	clock clock.Clock
	rec   Recorder
	hooks coreHooks

	sid      int64           // session our node (or pending create) belongs to
	node     string          // own node name, "" when none
	pending  *pendingCreate  // a create whose reply was lost; nil when none
	old      map[string]bool // protected ids given up: any node with one is an orphan to delete
	own      ownNode         // the own node as read and watched (armOwn)
	gen      uint64          // bumped when the watches set so far stop mattering
	dirty    bool            // the queue (race: the leader node) must be read again
	holdOff  time.Time       // no join (misconfigured) or no race (just released) before this
	standing bool            // a candidate: joins and may lead (SetCandidate)
	adopt    bool            // a resumed session: find its node before anything else (adopt.go)
}

// coreHooks are the recipe's own parts of the shared steps.
type coreHooks struct {
	resolve  func() error // settle pending: adopt or delete the node (CURATOR-498)
	forgot   func()       // the own node is gone: drop the recipe's state about it
	released func()       // the own node is about to be deleted on release
}

// pendingCreate is a create whose reply was lost: the node may exist or not
// until the recipe looks (CURATOR-498).
type pendingCreate struct {
	// Exactly one is set: uuid, the protected id to look for among the
	// children (queue recipes), or name, the node's known name (race).
	uuid, name string
}

// ownNode is the own node as read and watched by armOwn.
type ownNode struct {
	name string // node it was read for; "" when not armed
	data []byte
	stat *zk.Stat
}

func newCore(h recipeHost, cfg Config, log *slog.Logger, clk clock.Clock, rec Recorder) *core {
	return &core{h: h, cfg: cfg, log: log, clock: clk, rec: rec, old: map[string]bool{}, standing: !cfg.Observer}
}

// misconfigRetry is how often a participant that refused a path holding
// another mode's nodes looks again.
const misconfigRetry = 2 * time.Second

// stand makes this participant a candidate or an observer from the next
// step on; the watches set so far stop mattering.
func (c *core) stand(standing bool) {
	c.standing, c.dirty = standing, true
	c.gen++
}

// verify makes the next step read the election again: after a reconnect,
// or a leadership given up on suspend.
func (c *core) verify() { c.dirty = true }

// owns reports whether this participant has a node, or a create whose
// reply was lost, in the election.
func (c *core) owns() bool { return c.node != "" || c.pending != nil }

// holding reports whether the view says this participant leads with its node.
func (c *core) holding() bool { return c.holdingNode(c.node) }

// holdingNode reports whether the view says this participant leads with node.
func (c *core) holdingNode(node string) bool {
	v := c.h.viewed()
	return v.holding(node)
}

// holdOffUntil is when a hold-off (misconfigured path, race release) ends.
func (c *core) holdOffUntil() time.Time { return c.holdOff }

// stale reports a watch event that no longer matters: set for an older
// generation (the own node's watch: for an older node), or the library
// saying the watch is gone (the Elector handles the session).
func (c *core) stale(ev event) bool {
	if ev.zk.Type == zk.EventNotWatching {
		return true
	}
	if ev.kind == evOwn {
		return ev.node != c.node
	}
	return ev.gen != c.gen
}

// getW, childrenW and existsW are the host's watched reads for this
// generation.
func (c *core) getW(p string, kind eventKind, node string) ([]byte, *zk.Stat, error) {
	return c.h.getW(p, event{kind: kind, gen: c.gen, node: node})
}

func (c *core) childrenW(p string, kind eventKind, node string) ([]string, error) {
	return c.h.childrenW(p, event{kind: kind, gen: c.gen, node: node})
}

func (c *core) existsW(p string, kind eventKind, node string) (bool, error) {
	return c.h.existsW(p, event{kind: kind, gen: c.gen, node: node})
}

// wallNow is the wall-clock time shown as observed_at (not a deadline).
func (c *core) wallNow() time.Time { return c.clock.Now().UTC() }

// participant builds a Participant from a node read.
func (c *core) participant(name string, data []byte, stat *zk.Stat) Participant {
	m := c.h.meta(stat.EphemeralOwner)
	return Participant{
		ID:           string(data),
		Advertise:    m.Advertise,
		Proxy:        m.Proxy,
		Node:         name,
		Session:      stat.EphemeralOwner,
		FencingToken: stat.Czxid + c.cfg.FencingOffset,
	}
}

// nodeToken reads the fencing token of one of our nodes, for log lines (a
// create does not return the node's stat); 0 when the read fails.
func (c *core) nodeToken(name string) int64 {
	ok, stat, err := c.h.exists(nodePath(c.cfg.Path, name))
	if err != nil || !ok {
		return 0
	}
	return stat.Czxid + c.cfg.FencingOffset
}

// deleteNode deletes a node of ours that is not wanted; best effort, the
// next re-check finds it again by its protected id if this fails.
func (c *core) deleteNode(name string) {
	err := c.h.delete(nodePath(c.cfg.Path, name))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		c.log.Warn("could not delete orphan node; will retry", "node", name, "err", err)
		return
	}
	c.log.Info("deleted orphan node", "node", name)
}

// reapOld deletes children that carry a protected id we gave up (CURATOR-45/79).
func (c *core) reapOld(kids []string) {
	if len(c.old) == 0 {
		return
	}
	for _, k := range kids {
		if id := protectedID(k); id != "" && c.old[id] && k != c.node {
			c.deleteNode(k)
		}
	}
}

// abandonPending gives up a create whose outcome is unknown: any node it
// made is an orphan (CURATOR-45/79).
func (c *core) abandonPending() {
	if p := c.pending; p != nil && p.uuid != "" {
		c.old[p.uuid] = true
	}
	c.pending = nil
}

// createFailed handles what a failed create of the own node means and
// returns the error to retry on. A lost reply (connection error) keeps the
// pending create: the recipe resolves it after reconnecting.
func (c *core) createFailed(err error) error {
	switch {
	case isConnErr(err):
		return fmt.Errorf("create: %w", err) // outcome unknown
	case errors.Is(err, zk.ErrNoNode):
		c.h.pathGone()
	case errors.Is(err, zk.ErrNoAuth):
		c.h.refuse(noPermission(c.cfg.Path, err), "node", c.cfg.Path, "err", err)
	}
	c.pending = nil
	return fmt.Errorf("create: %w", err)
}

// noPermission says why a write ZooKeeper refused for lack of permission
// keeps this participant from standing.
func noPermission(p string, err error) string {
	return fmt.Sprintf("no permission on %s (%v): check zookeeper.auth", p, err)
}

// dupHint is what to do about a duplicate id, in every message about one.
const dupHint = "give each sidecar a unique id, e.g. the pod name"

// refuseForeign reports (and stays out of) a path holding another mode's
// nodes: a latch and a selector (or a race) on one path would each ignore
// the other's leader. It returns true when it refused, and then looks again
// after misconfigRetry.
func (c *core) refuseForeign(kids []string) bool {
	foreign := foreignNodes(c.cfg.Mode, kids)
	if len(foreign) == 0 {
		if c.h.viewed().misconfigured != "" {
			c.h.publish(func(v *view) { v.misconfigured = "" })
			c.log.Info("path no longer holds nodes of another mode; joining")
		}
		return false
	}
	msg := fmt.Sprintf("%s holds %d node(s) of another election mode (e.g. %s); electd in %s mode refuses to claim leadership there",
		c.cfg.Path, len(foreign), foreign[0], c.cfg.Mode)
	was := c.h.viewed().misconfigured
	c.h.publish(func(v *view) { v.misconfigured = msg })
	if was != msg {
		c.log.Error("misconfigured election path", "detail", msg)
	}
	c.holdOff = c.clock.Now().Add(misconfigRetry)
	return true
}

// orphans is what this participant may still own in the election, for the
// reaper (reaper.go) when a leave runs out of time.
func (c *core) orphans() orphans {
	o := orphans{sid: c.sid, dir: c.cfg.Path, ids: map[string]bool{}}
	for id := range c.old {
		o.ids[id] = true
	}
	if p := c.pending; p != nil && p.uuid != "" {
		o.ids[p.uuid] = true
	}
	if p := c.pending; p != nil && p.name != "" {
		o.names = append(o.names, nodePath(c.cfg.Path, p.name))
	}
	if c.node != "" {
		o.names = append(o.names, nodePath(c.cfg.Path, c.node))
	}
	return o
}

// leftover names what a leave left behind: the own node or a create whose
// reply was lost.
func (c *core) leftover() string {
	if c.node == "" {
		return "a create whose reply was lost"
	}
	return "node " + c.node
}

func isConnErr(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, zk.ErrClosing)
}
