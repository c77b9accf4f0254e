// Package zktest runs real Apache ZooKeeper servers for tests, and a TCP proxy that injects
// network faults between a client and a server or between two servers.
//
// It uses Debian's packages (apt-get install -y zookeeper: ZooKeeper 3.8 jars under
// /usr/share/java, run by the `java` in PATH). Nothing is mocked: every test talks to a
// real server, so sessions, ephemerals, watches, expiry and elections behave as in
// production. A missing java or jar fails the test with the apt package to install; it is
// never a skip. In -short mode, which runs the unit tests alone, Start skips the test
// instead (Require: the one place that decides).
//
// # Ensembles
//
//	e := zktest.Start(t, zktest.Options{Servers: 3, PeerProxies: true})
//	conn, _, _ := zk.Connect(e.Servers(), 4*time.Second)
//	e.Isolate(e.Leader()) // partition the ZooKeeper leader from its peers
//
// Start launches each server (QuorumPeerMain) in its own process group, on loopback ports
// of its own and a fresh data dir, waits until the ensemble serves (standalone, or one
// leader and all others following), and registers a cleanup that kills everything and
// removes the dirs. Start takes about 0.6 s for a standalone server and 1.5 to 2 s for three
// (JVM start-up, then an election). StartEnsemble does the same for programs without a
// testing.TB; they must Close the ensemble.
//
// Members keep their ports, config and data across Stop/Start and Kill/Start, so a test can
// restart a server, crash it, or take the whole ensemble down (StopAll/StartAll) and find its
// data again. Member.Start returns once the JVM runs; Ensemble.WaitReady waits until it
// serves. Mode and FourLetter ask a server directly ("srvr", "mntr", "cons", "ruok"), and
// ServerOfSession finds the server a client session is connected to.
//
// Defaults: tickTime 500 ms (negotiated session timeouts then lie between 1 s and 10 s),
// initLimit 10, syncLimit 5, -Xmx256m (Options.Heap). Servers run with forceSync=no (a killed
// JVM loses nothing; only a machine crash could; Options.ForceSync restores ZooKeeper's
// default) and no per-address connection limit.
//
// # Partitions
//
// With Options.PeerProxies every server reaches each peer's quorum and election ports
// through a Proxy owned by that ordered pair of servers, and Isolate blackholes every proxy
// of a pair that includes the member: a silent partition. ZooKeeper notices it through its
// own timeouts, as it would on a real network: a follower drops its leader after
// syncLimit x tickTime, a leader without a quorum of followers steps down, and the majority
// elects a new leader within about 3 s at the defaults. The isolated server keeps running
// and its client port stays open, but it does not serve (Mode returns "") until Rejoin.
// ZooKeeper's election protocol makes a server connect back to the address a peer advertises
// for itself; the election proxies rewrite that address so connect-backs cross the proxies
// too.
//
// # Proxy
//
// NewProxy puts a forwarder in front of any TCP address, typically a client's view of a
// server. Blackhole holds bytes without closing anything (a client then times out on its
// own; Heal delivers what was held), Reset closes every connection with an RST, Refuse
// keeps new connections out until Heal, and DropAfterCreate lets the next ZooKeeper create
// request reach the server and then cuts the connection so that the client never sees the
// reply: the "connection lost during create" case of protected, sequential nodes (with
// Options.RunStaleRequests, so that the server does not drop the create as stale).
//
// # Hygiene
//
// Ports are drawn below the kernel's ephemeral range and locked across processes, so
// parallel test binaries, outgoing connections and other listeners do not take them, even
// while a server is down; if Start still hits a taken port, it retries on fresh ports.
// On Linux the kernel kills the servers if the test binary dies (PR_SET_PDEATHSIG), so no
// JVM outlives a test run, even one killed by a timeout. Each server's output, with
// ZooKeeper's own log at INFO, goes to Member.LogPath; when a test fails, Start's cleanup
// logs the tail of every server's log.
package zktest
