// Package execmode runs a command only while this participant leads
// (docs/design/handover.md, "Exec mode"):
// `electd run -- CMD`, as `consul lock` runs its child.
//
// Two processes stand between electd and the command, each with one job:
//
//   - The Supervisor, in electd, watches the election: it starts the
//     command when this participant leads, stops it when it does not, and
//     does what exec.on_exit says when the command exits on its own. A
//     leader that gives leadership up on purpose (release, switchover,
//     withdrawn candidacy, shutdown) stops the command first and lets go
//     after (Yield, Stop), so that the next leader's command never starts
//     while this one runs.
//   - A guard process (electd itself, run as `electd __exec-guard`)
//     starts the command in a process group of its own and kills that
//     group when electd says so, when electd's lease ends without being
//     renewed, and when electd goes away (its control pipe closes). The
//     lease is handed over as a deadline on CLOCK_MONOTONIC, which both
//     processes read, so a stopped or hung electd still cannot keep the
//     command running past the moment another participant may lead.
//
// The command gets SIGTERM first and SIGKILL exec.kill_timeout later, except
// at the lease's end, where it gets SIGKILL: the lease has no time left to
// wait in. It must not outlive electd: the guard kills its group on every
// exit path of electd, SIGKILL included (the pipe closes), and the kernel
// kills the command itself if the guard dies (Pdeathsig, Linux).
package execmode
