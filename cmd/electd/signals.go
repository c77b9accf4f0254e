package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// stopSignals are the signals that each start the graceful shutdown of
// docs/design/session-and-faults.md, "Process"; a second one exits at once. SIGHUP is one of
// them: a closed terminal or a supervisor's stop must release leadership
// like SIGTERM, not kill the leader without deleting its node (followers
// then waited a whole session timeout). A process started with SIGHUP
// ignored (nohup) keeps it ignored: Notify would otherwise undo that. Call
// it once, before any Notify.
func stopSignals() []os.Signal {
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// survivePipes makes a write to a closed stdout or stderr fail with EPIPE
// instead of killing electd with SIGPIPE: without a Notify for SIGPIPE the
// Go runtime exits on a broken pipe on fd 1 or 2 (os/signal, "SIGPIPE"),
// so `electd 2>&1 | head -n 3` died at start, without releasing. The
// channel is never read: Notify only has to be in force.
func survivePipes() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// printSignals completes --help with what each signal does.
func printSignals(w io.Writer) {
	fmt.Fprint(w, `
Signals in full: SIGTERM, SIGINT and SIGHUP all shut down gracefully:
/healthz/leader answers 503 at once, electd waits shutdown_grace, deletes
its node so that a follower takes over within milliseconds, stops serving,
closes its ZooKeeper session and exits 0, all within shutdown_timeout (1 if
that runs out). SIGHUP reloads nothing; it stays ignored when electd was
started with it ignored (nohup). A second of these signals exits at once
with status 1. SIGPIPE does not stop electd: when whoever reads its stderr
goes away or stops reading, log lines are dropped and counted
(electd_log_lines_dropped_total) and electd runs on; no log write ever
holds up the shutdown.
`)
}
