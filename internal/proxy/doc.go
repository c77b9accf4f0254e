// Package proxy forwards an application's traffic to the participant that
// leads (docs/design/proxy.md, "Forwarding"), so that clients reach the leader
// through any participant within milliseconds of a change, without waiting
// for a load balancer to follow it.
//
// On the leader, requests (HTTP mode) or connections (TCP mode) go to the
// local application; on a follower they go to the leader's proxy, on its
// peer port, naming the election and the leadership they are meant for:
// that proxy takes them only as that leadership, with a valid lease, and
// bounces anything else back unprocessed with its own view. A request is
// sent again only when it provably reached no application, paced by the
// route's probe, or says it may be repeated: at most twice, within a
// budget. While nobody leads, requests wait up to the hold time for a
// leader. The requests the application gets carry the
// leader's fencing token and id, so that it can fence its writes.
//
// The package knows nothing of ZooKeeper or the election's internals: it
// routes by a Leadership, a narrow view computed at call time, reports
// counts to a Recorder, and asks the election to step down through
// Leadership.StepDown when the application refuses connections or answers
// nothing.
package proxy
