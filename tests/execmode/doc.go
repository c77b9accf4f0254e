// Package execmode tests `electd run -- CMD` (docs/design/handover.md, "Exec
// mode") with real electd processes on a real ZooKeeper: the command runs
// only while its participant leads, never two at once (an exclusive flock
// says so exactly), through releases, SIGTERM, SIGKILL, a stopped electd
// whose lease runs out, exec.kill_timeout and exec.on_exit.
package execmode
