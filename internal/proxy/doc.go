// Package proxy forwards an application's traffic to the participant that
// leads (docs/DESIGN.md, "Forwarding"), so that clients reach the leader
// through any participant within milliseconds of a change, without waiting
// for a load balancer to follow it.
//
// On the leader, requests (HTTP mode) or connections (TCP mode) go to the
// local application; on a follower they go to the leader's proxy, which
// checks that it still leads before it hands them to its application, and
// forwards once more or holds them when it does not. While nobody leads,
// requests wait up to the hold time for a leader. Forwarded HTTP requests
// carry the leader's fencing token and id in headers set by the proxy that
// hands them to the application, so the application can fence its writes.
//
// The package knows nothing of ZooKeeper or the election's internals: it
// routes by a Leadership, a narrow view computed at call time, reports
// counts to a Recorder, and asks the election to step down through
// Leadership.StepDown when the application refuses connections.
package proxy
