// Package daemon tests the electd binary end to end against a real
// ZooKeeper: the three modes and their handoff on SIGTERM, long polls and
// releases, /events, a configuration from the environment alone,
// shutdown_grace, startup (agreement at the first /readyz, liveness without
// ZooKeeper, http.addr's port 0), a shutdown with nothing to delete, a
// rotation of the ZooKeeper credential by rolling restarts, and the exit
// statuses and lines of a bad configuration.
package daemon
