// Package proxytest proves the forwarding proxy (internal/proxy) joined to
// real electors on a real ZooKeeper (tests/zktest) by internal/forward, as
// the daemon joins them, in one process: participants that each run an
// elector, a proxy and a fenced application, while leadership moves
// (docs/design/proxy.md, "Forwarding"). The tests with electd processes are in
// tests/forward.
package proxytest
