// Package execmode runs a command only while this participant leads
// (docs/design/handover.md, "Exec mode"):
// `electd run -- CMD`, as `consul lock` runs its child.
//
// Two processes stand between electd and the command, each with one job:
//
//   - The Supervisor, in electd, watches the election. It starts the
//     command when this participant leads and stops it when it does not.
//     When the command exits on its own, it does what exec.on_exit says.
//     A leader that gives leadership up on purpose (release, switchover,
//     withdrawn candidacy, shutdown) stops the command first, then lets go
//     (Yield, Stop). So the next leader's command never starts while this
//     one runs.
//   - A guard process (electd itself, run as `electd __exec-guard`)
//     starts the command in a process group of its own. It kills that
//     group when electd says so, when electd's lease ends unrenewed, and
//     when electd goes away (its control pipe closes). The lease is handed
//     over as a deadline on CLOCK_MONOTONIC, which both processes read.
//     So a stopped or hung electd cannot keep the command running once
//     another participant may lead.
//
// The command gets SIGTERM first and SIGKILL exec.kill_timeout later. At
// the lease's end it gets SIGKILL at once: the lease has no time left.
// The command must not outlive electd. The guard kills its group on every
// exit path of electd, SIGKILL included, since the pipe closes. If the
// guard dies, the kernel kills the command (Pdeathsig, Linux).
package execmode
