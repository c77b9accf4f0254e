// Package forward proves electd's forwarding proxy (docs/DESIGN.md,
// "Forwarding") with real parts: real ZooKeeper (tests/zktest), real electd
// processes (tests/electdtest), each with its proxy in front of a small HTTP
// application in the test process, and a paced load through every
// participant's proxy while leadership moves: the leader is sent SIGTERM,
// released, switched over, its application stops, it is SIGKILLed, its
// electd is stopped (SIGSTOP), it is cut off from ZooKeeper, and its
// application hangs. The applications check every request's fencing token
// against one fence (no request answered by a participant that did not
// lead at that moment) and keep a ledger of request ids (no POST ran
// twice); the load checks that every request got an answer, or a clean
// 503 within the hold time, and that graceful hand-overs failed none. gRPC
// goes through the proxies (unary, streams, status codes), and the
// proxies' ports are flooded as the API's are.
//
// The package's non-test files, the fenced application (App, Fence) and
// the load (Pool, Load), are shared with the bench's forward section
// (tests/bench).
package forward
