// Package cli tests `electd status` and `electd release`, the client
// commands (internal/cli), run as the real binary against real electd
// participants on a real ZooKeeper: the table, --watch, a release with and
// without --to, the admin token, and TLS with --cacert; and the command
// line itself (help, version, a misspelt command, booleans, electd run's
// "--"), with the messages a user sees.
package cli

// The exit statuses `electd status` and `electd release` document in their
// --help, written out here on purpose: the tests check that contract.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2 // the daemon's bad usage too
	exitUnreachable = 3
)
