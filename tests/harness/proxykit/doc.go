// Package proxykit is the forwarding proxy's harness, shared by the proxy
// suite (tests/proxy), tests/hardening, tests/harness/ledger and the bench's
// forward section (tests/bench): the fenced application (App, Fence), the
// paced load (Pool, Load), the cluster's waits (Settled, AtRest) and the
// route a set of views agrees on (Routed).
package proxykit
