package main

import (
	"fmt"
	"io"

	"github.com/electd/electd/internal/execmode"
)

// runGuard runs electd as exec mode's guard process (execmode.RunGuard)
// when args say so. Only electd itself starts it.
func runGuard(args []string) (int, bool) {
	if len(args) == 0 || args[0] != execmode.GuardCommand {
		return 0, false
	}
	return execmode.RunGuard(args[1:]), true
}

// printRunHelp completes --help with exec mode.
func printRunHelp(w io.Writer) {
	fmt.Fprintf(w, `
Exec mode: electd run [--config FILE] [--KEY VALUE ...] -- CMD [ARGS...]
runs CMD only while this participant leads (as consul lock does), with the
HTTP API as usual. CMD runs in a process group of its own with stdout and
stderr passed through and these variables set: %s (pass it to
storage with every write), %s, %s, %s,
%s and %s. When leadership ends CMD gets SIGTERM, and
SIGKILL exec.kill_timeout later; when the lease runs out it gets SIGKILL at
once. A release, switchover or withdrawal stops CMD before leadership goes;
SIGTERM to electd stops CMD, then releases. CMD never outlives electd, even
SIGKILLed. When CMD exits on its own, exec.on_exit says what electd does:
release (re-queue at the back), restart, or exit (status 0 when CMD exited
0, else 1). zookeeper.auth and http.admin_token are not passed to CMD.
`, execmode.EnvFencingToken, execmode.EnvLeaderID, execmode.EnvLeaderNode, execmode.EnvLeaderSession,
		execmode.EnvElectionPath, execmode.EnvHTTPAddr)
}
