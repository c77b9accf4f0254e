// Package bench measures electd against Apache Curator 5.4 and ZooKeeper
// itself on the machine it runs on (issue 10; BENCHMARKS.md has the
// figures, the method and what limits each): graceful handoff between
// electd processes over HTTP, beside Curator's LeaderLatch in one JVM and
// beside ZooKeeper's own floor (a delete until another client's watch
// fires), with a timeline of each handoff read from both processes' logs;
// crash failover; ZooKeeper requests per idle participant and per leader
// change; thousands of participants hosted in this process on a 3-server
// ensemble; an idle electd's footprint and /healthz/leader throughput; and
// the forwarding proxy: what a hop adds beside two floors (a bare Go
// ReverseProxy and HAProxy), each path at saturation with its CPU per
// request, and what a client sees through the proxies under each fault,
// from ledgers the applications keep by request id (tests/harness/ledger).
//
// Run starts everything it measures with tests/harness/zktest (real ZooKeeper
// servers), the electd binary and a Java program compiled at run time
// against Debian's Curator jars (testdata/CuratorBench.java), and stops it
// all before it returns. Figures are read on the bench's clock (one host,
// one clock: electd's JSON log lines carry nanosecond wall-clock times), or
// in the JVM for Curator's in-process handoff, and from the servers' own
// counters (mntr, cons) for ZooKeeper's load.
//
// It measures; it never asserts a speed. tests/bench/cmd (make bench) prints the
// report and keeps it in docs/bench (Report.ReportFile), `make bench` runs
// it, and TestBenchSmoke runs every section at the smallest sizes so that
// it keeps working.
package bench
