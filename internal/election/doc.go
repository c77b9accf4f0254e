// Package election takes part in one leader election on Apache ZooKeeper,
// in Apache Curator's node layout, so that Curator's LeaderLatch and
// LeaderSelector and electd participants on one path elect one leader
// between them (docs/design/election-and-lease.md, "Election modes").
//
// A Session (package zksession) owns the ZooKeeper connection, its session
// and the lease: a sync through the ZooKeeper leader every tenth of the session timeout,
// whose replies prove the session alive until a known instant
// (docs/design/election-and-lease.md, "The lease"). An Elector takes a Session (through the SessionHandle seam), a path and an
// identity, runs one recipe (the latch, the fair selector or the race) from
// its Run goroutine, and answers Status from memory, checked against the
// lease at call time: a participant leads only while it holds the lowest
// node and its lease is valid. It never closes the Session. Each recipe is
// its own type over one narrow seam, recipeHost (seam.go), which the
// Elector implements: queueRecipe (queue*.go) and raceRecipe (race.go),
// sharing core.go and own.go.
//
// The verbs: Run campaigns until its context ends; Release and Switchover
// hand leadership on; SetCandidate withdraws and stands again; SetAppUp
// publishes whether the application is up; Drain and Resign stop leading
// for shutdown; Observe and Await report changes; Done is closed when Run
// has returned. Every ZooKeeper request goes through
// the zkConn seam, which the unit tests script with a fake, as they fake
// recipeHost to test a recipe alone; the tests with real ZooKeeper and
// Curator (tests/election) are the proof.
//
// The package knows nothing of HTTP, Prometheus or configuration files:
// it reports counts through the Recorder and SessionRecorder hooks and
// reads time only from the clock.Clock it is given.
package election
