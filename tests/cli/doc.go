// Package cli tests `electd status` and `electd release`, the client
// commands (internal/cli), run as the real binary against real electd
// participants on a real ZooKeeper: the table, --watch, a release with and
// without --to, the admin token, and TLS with --cacert.
package cli

// The exit statuses `electd status` and `electd release` document in their
// --help, written out here on purpose: the tests check that contract.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUnreachable = 3
)
