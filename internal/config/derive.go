package config

import "time"

// shutdownMargin is what a derived shutdown_timeout leaves after
// shutdown_grace (and, under electd run, exec.kill_timeout) for the rest of
// the shutdown: resign, drain, close (well under a second when ZooKeeper
// answers).
const shutdownMargin = 5 * time.Second

// derive sets the defaults that depend on another key from what that key
// was set to, so that a default the user never set never rejects a value
// the user did set (setting app.health_interval to 200ms alone used to fail
// on the 1s default of app.health_timeout). given reports whether a source
// set a key (to a value that decoded). A default changes only where it
// would fail the check that relates the two keys; each rule is in the
// key's help. run is electd run, where exec.kill_timeout counts.
func (c *Config) derive(given func(key string) bool, run bool) {
	a := &c.App
	switch {
	case given("app.health_interval") && !given("app.health_timeout"):
		a.HealthTimeout = min(a.HealthTimeout, a.HealthInterval)
	case given("app.health_timeout") && !given("app.health_interval"):
		a.HealthInterval = max(a.HealthInterval, a.HealthTimeout)
	}

	// Shutdown stops electd run's command (up to exec.kill_timeout), then
	// waits shutdown_grace, then resigns: each must fit in shutdown_timeout.
	kill := time.Duration(0)
	if run {
		kill = c.Exec.KillTimeout
	}
	switch t := c.ShutdownTimeout; {
	case !given("shutdown_timeout") && (c.ShutdownGrace >= t || kill >= t):
		c.ShutdownTimeout = min(c.ShutdownGrace+kill+shutdownMargin, MaxShutdownTimeout)
	case run && !given("exec.kill_timeout") && kill >= t:
		c.Exec.KillTimeout = max(0, (t-c.ShutdownGrace)/2)
	}

	c.deriveProxy(given)

	h := &c.HTTP
	if !given("http.max_connections") {
		h.MaxConnections = max(h.MaxConnections, min(h.MaxStreams+h.MaxWaiters+HTTPHeadroom, MaxConnections))
		return
	}
	// max_connections was set: the caps not set share what it leaves, each
	// at most its default and at least 1.
	room, unset := h.MaxConnections-HTTPHeadroom, 0
	for _, k := range []struct {
		key string
		n   int
	}{{"http.max_streams", h.MaxStreams}, {"http.max_waiters", h.MaxWaiters}} {
		if given(k.key) {
			room -= k.n
		} else {
			unset++
		}
	}
	if unset == 0 {
		return
	}
	share := max(1, room/unset)
	if !given("http.max_streams") {
		h.MaxStreams = min(h.MaxStreams, share)
	}
	if !given("http.max_waiters") {
		h.MaxWaiters = min(h.MaxWaiters, share)
	}
}
