package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Bounces: the 421 with which a proxy sends back a forward it does not
// take (bounce), and how the proxy that sent it reads one (readView).

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

// Headers of a bounce (docs/design/proxy.md, "Forwarding").
const (
	// HeaderNotLeader marks the 421 with which a proxy bounces a forward
	// meant for a leadership it is not: unprocessed, so the proxy that
	// sent it may route it again. HeaderLeaderProxy, HeaderElection,
	// HeaderLeaderID and HeaderLeaderToken carry the bouncing proxy's view
	// of the leader.
	HeaderNotLeader   = "Electd-Not-Leader"
	HeaderLeaderProxy = "Electd-Leader-Proxy"
)

var (
	// errMisdirected: the leader's proxy bounced a forward as another
	// election's participant (another path).
	errMisdirected = errors.New("proxy: the leader's proxy takes part in another election")
)

// errOtherIncarnation: the leader's proxy names this election's path with
// another czxid. It is a bounce: nothing was processed.
var errOtherIncarnation = fmt.Errorf("%w: the leader's proxy names another incarnation of this election's path", errBounced)

// misdirected judges a bounce from the leader's proxy on route whose view
// names another election: errMisdirected, or errOtherIncarnation (held).
// Either is logged at most once per message every 10 s, with the count of
// those not logged: one line per request flooded the log (issue 37).
func (h *httpProxy) misdirected(route, view Route) error {
	its, this := view.Election, route.Election
	if electionPath(its) != electionPath(this) {
		return errMisdirected
	}
	h.warn.Warn("the leader's proxy names another incarnation of this election's path (it was created anew, "+
		"or that proxy uses the same path on another ZooKeeper): holding requests until the views agree",
		"leader_proxy", route.Addr, "its_election", its, "this_election", this)
	return errOtherIncarnation
}

// electionPath is the path of an election's identity, without its czxid.
func electionPath(id string) string {
	if i := strings.LastIndexByte(id, '@'); i >= 0 {
		return id[:i]
	}
	return id
}

// bounce answers a forward this proxy does not take: 421 with its view of
// the leader, unprocessed.
func bounce(q *exchange, view Route) Result {
	setView(q.w.Header(), view)
	if q.r.ProtoMajor == 1 {
		// What is left of the body would otherwise be read to keep the
		// connection.
		q.w.Header().Set("Connection", "close")
	}
	writeError(q.w, http.StatusMisdirectedRequest, "this participant is not the leader the forward names; route it again")
	return ResultBounced
}

// setView says in a 421 which leadership this proxy knows of.
func setView(h http.Header, r Route) {
	h.Set(HeaderNotLeader, "1")
	h.Set(HeaderElection, r.Election)
	if r.ID != "" {
		h.Set(HeaderLeaderID, r.ID)
		h.Set(HeaderLeaderToken, strconv.FormatInt(r.Token, 10))
	}
	if r.Addr != "" {
		h.Set(HeaderLeaderProxy, r.Addr)
	}
}

// readView reads a 421's view of the leader; ok is false when the answer
// is not a proxy's bounce.
func readView(h http.Header) (v Route, ok bool) {
	if h.Get(HeaderNotLeader) == "" {
		return Route{}, false
	}
	v.Election, v.ID, v.Addr = h.Get(HeaderElection), h.Get(HeaderLeaderID), h.Get(HeaderLeaderProxy)
	v.Token, _ = strconv.ParseInt(h.Get(HeaderLeaderToken), 10, 64)
	return v, true
}
