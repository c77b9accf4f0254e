// Package dataplane proves, with real processes, that electd's forwarding
// proxy (docs/design/proxy.md, "Forwarding") is a data plane an operator can trust
// (issue 28): real ZooKeeper (tests/zktest), real electd processes with
// proxy.listen (tests/electdtest), and applications in two languages behind
// them, each a process of its own that keeps a ledger of what reached it
// (tests/ledger: the Go one, and Python's http.server).
//
// Each test reproduces one of the failures as a new user met it and
// asserts what the must-haves promise, from the clients' answers and
// the applications' ledgers:
//
//   - stall_test.go: the leader's electd stopped (SIGSTOP) under load:
//     every request ends within its bound, no GET fails, no POST runs
//     twice, and the stopped participant is back at rest after SIGCONT;
//   - twice_test.go: an application that acts before it reads the body,
//     SIGKILLed with requests in hand: none runs twice, and the client is
//     told it may or may not have been processed;
//   - slowclient_test.go: a follower's connections taken by dribbling
//     POSTs: the other follower and the leader keep serving, with bounded
//     file descriptors and memory;
//   - continue_test.go: an application that never sends 100 Continue pays
//     nothing for it;
//   - election_test.go: a forward replayed to another election's proxy is
//     refused (421) and never executed;
//   - headers_test.go: request trailers, Electd-* headers, forwarding
//     headers and request ids;
//   - hung_test.go: a leader whose application accepts and never answers
//     hands leadership on, and clients of a slow path cannot move it;
//   - memory_test.go: a follower's clients that read nothing of large
//     answers hold a bounded share of its memory (a build without -race,
//     GOMEMLIMIT as shipped);
//   - retry_test.go: an application that drops requests unanswered runs
//     each at most three times (issue 37); the leader's electd and
//     application SIGKILLed with every key at its default: no request sent
//     after the kill fails, and the dead address is probed, not flooded;
//   - h2c_test.go: HTTP/2 with prior knowledge and gRPC (unary, a server
//     stream that follows a change, a stream both ways, status in
//     trailers) through the proxy, and WebSocket-style upgrades still cut
//     on release.
//   - framing_test.go: requests whose framing is ambiguous (a broken
//     chunk line, Content-Length with Transfer-Encoding, Transfer-Encoding
//     on HTTP/1.0) are answered 400, and neither they nor the requests
//     they hide reach the application (issue 37).
//
// Every test that injects a fault checks afterwards that every participant
// is back at its idle footprint (electdtest.WaitIdle). Bounds come from the
// configuration each test sets, plus a stated slack for scheduling on a
// loaded machine; waits have deadlines (tests/wait).
package dataplane
