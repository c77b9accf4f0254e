// Package chaos proves electd's fault tolerance: it runs real electd
// processes against a real ZooKeeper (standalone and a 3-server ensemble),
// injects faults, and checks four invariants from outside.
//
// The observer (electdtest.Observer) polls every participant's /healthz/leader
// every few milliseconds, one goroutine and one keep-alive connection per
// participant, and records each answer with its request's send and receive
// times on one monotonic clock. The checks (tests/harness/invariant) are pure
// functions of those samples:
//
//   - Safety: no two participants answered 200 in overlapping intervals; a
//     200 counts over the whole [send, receive] of its request. Because two
//     short requests rarely coincide, a stricter form is checked too: a
//     participant's consecutive 200s with one fencing token (no other answer
//     and no unanswered request between them) form a leadership span, and
//     spans of different participants must not intersect.
//   - Liveness: after each fault (or its heal) a leader is seen within the
//     negotiated session timeout + 1.5 x tickTime + 1 s.
//   - No orphans: at the end the nodes under the election path, read with
//     go-zookeeper directly, are exactly the live participants', one each
//     with distinct ids and sessions (race mode: only the leader node, owned
//     by the session its participant reports).
//   - Idle again (idle.go): then every live participant holds no more
//     goroutines than a participant did at rest, re-checks and asks
//     ZooKeeper at rest rates (its /metrics, and the frames its proxies
//     forward), and has no more watches on the servers than its role sets.
//
// Each electd dials ZooKeeper only through its own proxies (zktest.Proxy),
// one per (participant, server): cutting one participant off cuts all of
// its proxies, and a participant whose server dies fails over to its next
// proxy, as it would in production. electd's host provider tries servers in
// the configured order, so a participant's first proxy decides its server;
// to pin a session to a server (faults 4 and 5) the other proxies also
// refuse connections until the participant has joined.
//
// With on_suspend hold, faults 4 and 7 cut the leader's session off for as
// long as the machine takes (hold.go measures it). If the session is back a
// renewal's round-trip before the lease the leader last reported runs out,
// "no leadership change" means, over a window from before the fault until
// after the session has reconnected (and the server is back): every answer the
// leader gave was a 200 carrying the fencing token it had before (one 503 is a
// change, however short); no other participant answered 200; the leader's 200s
// leave no gap longer than noChangeGap (only questions unanswered or not asked
// can make one). Otherwise the lease may rightly lapse: no other participant
// answers 200, the leader's 200s keep the old token and stop when its lease
// runs out while no server can renew it, and it leads again once back. Either
// way /leader shows the same session id and token afterwards.
//
// Every participant also runs its forwarding proxy in front of an
// application of its own (Go or Python, tests/harness/ledger), and a paced load goes
// through the proxies while each fault lasts (traffic.go): at the end, from
// the applications' ledgers keyed by request id and the clients' answers, no
// POST ran twice, no request reached an application whose participant did
// not lead at that moment (the fencing token), and every request ended
// within its bound in an answer or a clean 503/504 (issue 28, must have 9).
//
// The faults (faults.go, faults_zk.go, faults_proxy.go) are numbered as in
// the issue: 1 leader cut off (blackhole or refuse, 0.5 or 2 x the session
// timeout), 2 SIGSTOP/SIGCONT, 3 kill -9, 4 kill of the leader's ZooKeeper
// server, 5 that server isolated from its peers, 6 the whole ensemble down, 7
// a standalone server restart (7b: kept down until the leader's lease has run
// out), 8 random cuts while participants join, leave and crash; and, for the
// proxies, 9 the leader's application killed with a POST in hand, 10 the
// leader's proxy cut from its peers' (blackhole or refuse).
//
// go test -race ./tests/chaos/ runs a short subset; -args -chaos.long
// runs the whole matrix -chaos.runs times and prints the summary table.
package chaos
