package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateAppAndExec(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		key  string // "" when valid
		msg  string
	}{
		{"defaults", func(c *Config) {}, "", ""},
		{"health url", func(c *Config) { c.App.HealthURL = "http://127.0.0.1:8080/healthz?deep=1" }, "", ""},
		{"https url", func(c *Config) { c.App.HealthURL = "https://app.local/health" }, "", ""},
		{"no scheme", func(c *Config) { c.App.HealthURL = "127.0.0.1:8080/healthz" }, "app.health_url", "not a URL"},
		{"ftp", func(c *Config) { c.App.HealthURL = "ftp://a/b" }, "app.health_url", "not an http"},
		{"no host", func(c *Config) { c.App.HealthURL = "http:///healthz" }, "app.health_url", "no host"},
		{"port only", func(c *Config) { c.App.HealthURL = "http://:8080/healthz" }, "app.health_url", "no host"},
		{"credentials", func(c *Config) { c.App.HealthURL = "http://u:hunter2@a/b" }, "app.health_url", "credentials"},
		{"fragment", func(c *Config) { c.App.HealthURL = "http://a/b#c" }, "app.health_url", "fragment"},
		{"bad port", func(c *Config) { c.App.HealthURL = "http://a:99999/b" }, "app.health_url", "port"},
		{"port 0", func(c *Config) { c.App.HealthURL = "http://a:0/b" }, "app.health_url", "port"},
		{"control", func(c *Config) { c.App.HealthURL = "http://a/\x1b" }, "app.health_url", "control"},
		{"long", func(c *Config) { c.App.HealthURL = "http://a/" + strings.Repeat("x", MaxHealthURLBytes) }, "app.health_url", "at most 2048"},
		{"interval short", func(c *Config) { c.App.HealthInterval = 99 * time.Millisecond }, "app.health_interval", "outside"},
		{"interval long", func(c *Config) { c.App.HealthInterval = 61 * time.Minute }, "app.health_interval", "outside"},
		{"timeout short", func(c *Config) { c.App.HealthTimeout = time.Millisecond }, "app.health_timeout", "shorter"},
		{"timeout over interval", func(c *Config) { c.App.HealthTimeout = 11 * time.Second }, "app.health_timeout", "longer than app.health_interval"},
		{"timeout is interval", func(c *Config) { c.App.HealthTimeout = 10 * time.Second }, "", ""},
		{"failure 0", func(c *Config) { c.App.FailureThreshold = 0 }, "app.failure_threshold", "outside 1 to 100"},
		{"success 101", func(c *Config) { c.App.SuccessThreshold = 101 }, "app.success_threshold", "outside 1 to 100"},
		{"kill 0", func(c *Config) { c.Exec.KillTimeout = 0 }, "", ""},
		{"kill long", func(c *Config) { c.Exec.KillTimeout = 11 * time.Minute }, "exec.kill_timeout", "more than"},
		{"on_exit", func(c *Config) { c.Exec.OnExit = "rerun" }, "exec.on_exit", "release, restart or exit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			c.ID, c.ZooKeeper.Servers, c.Election.Path = "web-1", []string{"zk:2181"}, "/x"
			tc.set(&c)
			_, err := prepared(&c)
			var ke *KeyError
			switch {
			case tc.key == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.key == "":
			case !errors.As(err, &ke) || ke.Key != tc.key || !strings.Contains(err.Error(), tc.msg):
				t.Errorf("error %v; want one naming %s with %q", err, tc.key, tc.msg)
			case strings.Contains(err.Error(), "hunter2"):
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// prepared runs the checks of Load on c, decoded already.
func prepared(c *Config) (Prepared, error) {
	var errs errorList
	p := c.prepare(&errs, func(string) bool { return false }, "")
	return p, errs.err()
}
