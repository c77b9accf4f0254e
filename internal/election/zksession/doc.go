// Package zksession keeps one ZooKeeper session alive for electd: it dials
// (TLS optional), re-resolves the servers, authenticates, renews the lease
// and resumes a session after a restart. It knows nothing of elections;
// internal/election runs its recipes on a Session (docs/design/session-and-faults.md).
//
// The package reads time only through a clock.Clock (Config.Clock). The one
// exception is a socket deadline (dial.go): the kernel checks it against its
// own clock, and go-zookeeper sets its deadlines from package time.
//
// Its errors and field errors still say "election" (ErrSessionClosed,
// FieldError.Pkg): internal/config maps that name back to its keys.
package zksession
