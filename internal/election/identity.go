package election

import (
	"fmt"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The election's identity (docs/design/proxy.md, "Every forward names its
// election and its leader"): the path, with its chroot, and the czxid of
// the path's node as this participant last read it, "/path@0x<czxid>".
// The path tells this election from another on the same ensemble; the
// czxid tells it from the same path on another ensemble (a reused address
// pointing at another cluster's proxy). The forwarding proxy puts it on
// every forward, and a proxy takes only its own election's.
//
// The path is a CONTAINER node: once empty, ZooKeeper reaps it, or an
// operator deletes it, and the next participant to stand creates it anew
// with another czxid (another incarnation). Nothing ZooKeeper keeps is
// both distinct per ensemble and safe from that (the root's czxid is 0
// everywhere), so the identity is not derived once: it is read again.
// The path cannot change under a node: it is deleted only while empty.
// So a participant reads the current incarnation whenever it reads the
// path after its own node, or the leader's it follows, appeared:
//   - every children read of the path returns the path's Stat, and
//     refreshes the identity at no cost (a queue participant's join and
//     re-checks, a queue observer's look, a race before its create);
//   - the race, whose winner, losers and observers can see a new leader
//     node without listing the path, reads the path's Stat once per own
//     node claimed and once per new leader node followed (reidentify).
// Every participant thus names a new incarnation by the time its view
// names a leader in it. A forward sent meanwhile is bounced by a leader
// that names another incarnation of the same path, and the sender holds
// it until the views agree (docs/design/proxy.md, "Every forward names its
// election and its leader").

// sawPath records the incarnation a read of the path's node found, and
// tells Observe when it changed.
func (e *Elector) sawPath(stat *zk.Stat) {
	id := fmt.Sprintf("%s@0x%x", e.cfg.Path, stat.Czxid)
	old := e.identity.Swap(&id)
	switch {
	case old == nil:
	case *old == id:
		return
	default:
		e.log.Info("the election path was created anew: naming its new incarnation", "election", id, "was", *old)
	}
	e.poke()
}

// electionID is what the last read of the path found; "" before.
func (e *Elector) electionID() string {
	if id := e.identity.Load(); id != nil {
		return *id
	}
	return ""
}
