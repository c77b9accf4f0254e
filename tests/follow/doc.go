// Package follow tests how leadership follows the application
// (docs/design/handover.md, "Following the application") with real electd
// processes on a real ZooKeeper: application health checks, candidacy set
// at start and at run time, and switchover to a named participant.
package follow
