package proxy

import (
	"fmt"
	"strings"
)

// A 421 whose view names another election than the forward did
// (docs/design/proxy.md, "Every forward names its election and its leader"). An
// election's identity is its path and the czxid of the path's node
// ("/path@0x<czxid>"). Another path is another election: a
// misconfiguration, answered 503 at once. The same path with another czxid
// is the path created anew (its container reaped once empty, or deleted by
// hand) while one side still names the older one: each participant reads
// the new one soon, so the request is held, as for an older leadership,
// until the views agree or its hold time ends. The same path on another
// ZooKeeper looks alike; it ends the same way, after the hold time.

// errOtherIncarnation: the leader's proxy names this election's path with
// another czxid. It is a bounce: nothing was processed.
var errOtherIncarnation = fmt.Errorf("%w: the leader's proxy names another incarnation of this election's path", errBounced)

// misdirected judges a's bounce, whose view (a.view) names another
// election than a's route: errMisdirected, or errOtherIncarnation (held).
// Either is logged at most once per message every 10 s, with the count of
// those not logged: one line per request flooded the log (issue 37).
func (h *httpProxy) misdirected(a *attempt) error {
	its, this := a.view.Election, a.route.Election
	if electionPath(its) != electionPath(this) {
		return errMisdirected
	}
	h.warn.Warn("the leader's proxy names another incarnation of this election's path (it was created anew, "+
		"or that proxy uses the same path on another ZooKeeper): holding requests until the views agree",
		"leader_proxy", a.route.Addr, "its_election", its, "this_election", this)
	return errOtherIncarnation
}

// electionPath is the path of an election's identity, without its czxid.
func electionPath(id string) string {
	if i := strings.LastIndexByte(id, '@'); i >= 0 {
		return id[:i]
	}
	return id
}
