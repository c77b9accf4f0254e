// Package forward proves electd's forwarding proxy (docs/design/proxy.md,
// "Forwarding") with real parts: real ZooKeeper (tests/zktest), real electd
// processes (tests/electdtest), each with its proxy in front of a small HTTP
// application in the test process, and a paced load through every
// participant's proxy while leadership moves: the leader is sent SIGTERM,
// released, switched over, its application stops (over HTTP/1.1, with
// proxy.resend_unread_body, and over HTTP/2 with proxy.app_protocol h2c),
// it is SIGKILLed, it is cut off from ZooKeeper, and its application hangs.
// The applications check every request's fencing token against one fence
// (no request answered by a participant that did not lead at that moment)
// and keep a ledger of request ids (no POST ran twice); the load checks
// that every request got an answer, or a clean 503 within the hold time,
// and that graceful hand-overs failed none. The proxies' ports are flooded
// as the API's are. A stopped (SIGSTOP) leader, and gRPC, are tests/dataplane's.
//
// The package's non-test files, the fenced application (App, Fence), the
// load (Pool, Load) and the cluster's waits (Settled, AtRest), are shared
// with tests/dataplane and the bench's forward section (tests/bench).
package forward
