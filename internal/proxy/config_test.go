package proxy

import (
	"errors"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{Listen: ":4041", App: "127.0.0.1:8080"}
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string // "" when valid
	}{
		{"minimal", func(*Config) {}, ""},
		{"tcp", func(c *Config) { c.Mode, c.PeerListen = ModeTCP, ":4042" }, ""},
		{"unknown mode", func(c *Config) { c.Mode = "udp" }, "Mode"},
		{"no listen", func(c *Config) { c.Listen = "" }, "Listen"},
		{"listen without port", func(c *Config) { c.Listen = "localhost" }, "Listen"},
		{"listen on a bad port", func(c *Config) { c.Listen = ":70000" }, "Listen"},
		{"no app", func(c *Config) { c.App = "" }, "App"},
		{"app without host", func(c *Config) { c.App = ":8080" }, "App"},
		{"app on port 0", func(c *Config) { c.App = "localhost:0" }, "App"},
		{"app with a space", func(c *Config) { c.App = "local host:80" }, "App"},
		{"peer listen in http mode", func(c *Config) { c.PeerListen = ":4042" }, "PeerListen"},
		{"tcp without peer listen", func(c *Config) { c.Mode = ModeTCP }, "PeerListen"},
		{"tcp on one port", func(c *Config) { c.Mode, c.PeerListen = ModeTCP, ":4041" }, "PeerListen"},
		{"hold past the maximum", func(c *Config) { c.HoldTime = MaxHoldTime + 1 }, "HoldTime"},
		{"negative hold", func(c *Config) { c.HoldTime = -time.Second }, "HoldTime"},
		{"drain as long as the hold", func(c *Config) { c.HoldTime, c.DrainTimeout = time.Second, time.Second }, "DrainTimeout"},
		// A hold set alone shortens the default drain rather than failing.
		{"short hold, default drain", func(c *Config) { c.HoldTime = time.Second }, ""},
		{"held past connections", func(c *Config) { c.MaxHeld, c.MaxConnections = 11, 10 }, "MaxHeld"},
		{"connections past the cap", func(c *Config) { c.MaxConnections = MaxCap + 1 }, "MaxConnections"},
		{"negative held", func(c *Config) { c.MaxHeld = -1 }, "MaxHeld"},
		// Few connections set alone lower the default of MaxHeld.
		{"few connections", func(c *Config) { c.MaxConnections = 8 }, ""},
		{"dial of a nanosecond", func(c *Config) { c.DialTimeout = time.Nanosecond }, "DialTimeout"},
		{"idle under a second", func(c *Config) { c.IdleTimeout = time.Millisecond }, "IdleTimeout"},
		{"response of a day", func(c *Config) { c.ResponseTimeout = 24 * time.Hour }, ""},
		{"negative body", func(c *Config) { c.BodyTimeout = -1 }, "BodyTimeout"},
		{"headers too small", func(c *Config) { c.MaxHeaderBytes = 100 }, "MaxHeaderBytes"},
		{"headers too large", func(c *Config) { c.MaxHeaderBytes = MaxHeaderBytes + 1 }, "MaxHeaderBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			var fe *FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.field != "" && !errors.As(err, &fe):
				t.Fatalf("want a FieldError on %s, got %v", tc.field, err)
			case tc.field != "" && fe.Field != tc.field:
				t.Fatalf("error on %s (%v), want %s", fe.Field, err, tc.field)
			}
			if err == nil {
				d := c.withDefaults()
				if d.DrainTimeout >= d.HoldTime || d.MaxHeld > d.MaxConnections {
					t.Fatalf("defaults break a relation: %+v", d)
				}
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	d := Config{Listen: ":4041", App: "127.0.0.1:8080"}.withDefaults()
	if d.Mode != ModeHTTP || d.HoldTime != DefaultHoldTime || d.DrainTimeout != DefaultDrainTimeout ||
		d.MaxHeld != DefaultMaxHeld || d.MaxConnections != DefaultMaxConnections || d.DialTimeout != DefaultDialTimeout ||
		d.HeaderTimeout != DefaultHeaderTimeout || d.ResponseTimeout != DefaultResponseTimeout ||
		d.IdleTimeout != DefaultIdleTimeout || d.BodyTimeout != DefaultBodyTimeout || d.MaxHeaderBytes != DefaultMaxHeaderBytes {
		t.Fatalf("defaults %+v", d)
	}
}

// The guard trips on a slot without progress for the stall time, or on
// no activity at all for the idle time, and not before.
func TestGuard(t *testing.T) {
	for _, tc := range []struct {
		name      string
		idle      time.Duration
		act       func(g *guard, c *clocktest.Fake)
		want      error
		notBefore time.Duration
	}{
		{"slot stalls", 0, func(g *guard, c *clocktest.Fake) { g.progress(0) }, errStalled, 10 * time.Second},
		{"progress moves it", 0, func(g *guard, c *clocktest.Fake) {
			g.progress(1)
			c.Advance(6 * time.Second)
			g.progress(1)
		}, errStalled, 16 * time.Second},
		{"idle", 30 * time.Second, func(g *guard, c *clocktest.Fake) {}, errIdle, 30 * time.Second},
		{"activity moves idle", 30 * time.Second, func(g *guard, c *clocktest.Fake) {
			c.Advance(20 * time.Second)
			g.touch()
		}, errIdle, 50 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clocktest.NewFake(time.Unix(1000, 0))
			tripped := make(chan error, 2)
			start := c.Now()
			g := newGuard(c, 10*time.Second, tc.idle, func(err error) { tripped <- err })
			defer g.stop()
			tc.act(g, c)
			for c.Now().Sub(start) < tc.notBefore-time.Second {
				c.Advance(time.Second)
				waitFor(t, "the guard to look", func() bool { return c.Pending() == 1 || len(tripped) > 0 })
				if len(tripped) > 0 {
					t.Fatalf("tripped after %v, want not before %v", c.Now().Sub(start), tc.notBefore)
				}
			}
			c.Advance(time.Second)
			if err := recv(t, tripped, "the trip"); !errors.Is(err, tc.want) {
				t.Fatalf("tripped with %v, want %v", err, tc.want)
			}
		})
	}
	c := clocktest.NewFake(time.Unix(1000, 0))
	g := newGuard(c, time.Second, 0, func(error) { t.Error("tripped after stop") })
	g.progress(0)
	g.stop()
	c.Advance(time.Hour)
}
