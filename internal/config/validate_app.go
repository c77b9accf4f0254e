package config

import (
	"net/url"
	"strings"
	"time"
)

// Limits of the app.* and exec.* keys.
const (
	// MaxHealthURLBytes bounds app.health_url: it is sent on every check
	// and logged with every change of health.
	MaxHealthURLBytes = 2048
	// MinHealthInterval and MaxHealthInterval bound app.health_interval:
	// below 100ms the checks cost the application more than they tell; an
	// hour between checks is no longer a health check.
	MinHealthInterval = 100 * time.Millisecond
	MaxHealthInterval = time.Hour
	// MinHealthTimeout: a check shorter than 10ms fails on a busy host
	// without the application being at fault.
	MinHealthTimeout = 10 * time.Millisecond
	// MaxThreshold bounds app.failure_threshold and app.success_threshold:
	// 100 checks at the longest interval are four days.
	MaxThreshold = 100
	// MaxKillTimeout bounds exec.kill_timeout, as MaxShutdownTimeout
	// bounds shutdown_timeout.
	MaxKillTimeout = 10 * time.Minute
)

// validateApp checks the app.* keys.
func (c *Config) validateApp(errs *errorList) {
	a := c.App
	errs.add(checkHealthURL(a.HealthURL))
	intervalOK := a.HealthInterval >= MinHealthInterval && a.HealthInterval <= MaxHealthInterval
	if !intervalOK {
		errs.add(errorf("app.health_interval", "%v is outside %v to %v", a.HealthInterval, MinHealthInterval, MaxHealthInterval))
	}
	switch t := a.HealthTimeout; {
	case t < MinHealthTimeout:
		errs.add(errorf("app.health_timeout", "%v is shorter than %v", t, MinHealthTimeout))
	case intervalOK && t > a.HealthInterval:
		errs.add(errorf("app.health_timeout", "%v is longer than app.health_interval (%v)", t, a.HealthInterval))
	}
	for _, r := range []struct {
		key string
		n   int
	}{{"app.failure_threshold", a.FailureThreshold}, {"app.success_threshold", a.SuccessThreshold}} {
		if r.n < 1 || r.n > MaxThreshold {
			errs.add(errorf(r.key, "%d is outside 1 to %d checks", r.n, MaxThreshold))
		}
	}
}

// checkHealthURL accepts an empty URL (checks disabled) or an absolute
// http(s) URL with a host and without credentials: the URL is logged and
// shown by --validate, so a password in it would leak.
func checkHealthURL(s string) error {
	const key = "app.health_url"
	if s == "" {
		return nil
	}
	if len(s) > MaxHealthURLBytes {
		return errorf(key, "%d bytes; at most %d", len(s), MaxHealthURLBytes)
	}
	if !printable(s) || strings.ContainsRune(s, ' ') {
		return errorf(key, "%s has a space, a control character or is not UTF-8", quote(s))
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return errorf(key, "%s is not a URL such as http://127.0.0.1:8080/healthz", quote(s))
	case u.Scheme != "http" && u.Scheme != "https":
		return errorf(key, "%s is not an http:// or https:// URL", quote(s))
	case u.Host == "" || u.Hostname() == "":
		return errorf(key, "%s has no host; e.g. http://127.0.0.1:8080/healthz", quote(s))
	case u.User != nil:
		return errorf(key, "has credentials (user:password@); electd logs and shows this URL")
	case u.Fragment != "":
		return errorf(key, "%s has a #fragment, which is never sent", quote(s))
	}
	if p := u.Port(); p != "" {
		if err := checkPort(p); err != nil {
			return errorf(key, "%s has a bad port (want 1-65535)", quote(s))
		}
	}
	return nil
}

// validateExec checks the exec.* keys on their own; checkRun checks
// exec.kill_timeout against shutdown_timeout for `electd run`, the one
// mode that uses it.
func (c *Config) validateExec() []error {
	var errs []error
	if t := c.Exec.KillTimeout; t > MaxKillTimeout {
		errs = append(errs, errorf("exec.kill_timeout", "%v is more than %v", t, MaxKillTimeout))
	}
	return append(errs, oneOf("exec.on_exit", c.Exec.OnExit, "release", "restart", "exit"))
}
