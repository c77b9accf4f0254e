package proxy

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{Listen: ":4041", PeerListen: ":4042", App: "127.0.0.1:8080", PeerKey: testPeerKey}
	for _, tc := range []struct {
		name   string
		edit   func(*Config)
		fields []string // every field named wrong; none when valid
	}{
		{"minimal", func(*Config) {}, nil},
		{"tcp", func(c *Config) { c.Mode = ModeTCP }, nil},
		{"unknown mode", func(c *Config) { c.Mode = "udp" }, []string{"Mode"}},
		{"h2c to the application", func(c *Config) { c.AppProtocol = AppH2C }, nil},
		{"unknown application protocol", func(c *Config) { c.AppProtocol = "h3" }, []string{"AppProtocol"}},
		{"no listen", func(c *Config) { c.Listen = "" }, []string{"Listen"}},
		{"listen without port", func(c *Config) { c.Listen = "localhost" }, []string{"Listen"}},
		{"listen on a bad port", func(c *Config) { c.Listen = ":70000" }, []string{"Listen"}},
		{"no app", func(c *Config) { c.App = "" }, []string{"App"}},
		{"app without host", func(c *Config) { c.App = ":8080" }, []string{"App"}},
		{"app on port 0", func(c *Config) { c.App = "localhost:0" }, []string{"App"}},
		{"app with a space", func(c *Config) { c.App = "local host:80" }, []string{"App"}},
		{"no peer listen", func(c *Config) { c.PeerListen = "" }, []string{"PeerListen"}},
		{"peers on the clients' port", func(c *Config) { c.PeerListen = ":4041" }, []string{"PeerListen"}},
		{"no peer key", func(c *Config) { c.PeerKey = "" }, []string{"PeerKey"}},
		{"a short peer key", func(c *Config) { c.PeerKey = testPeerKey[:MinPeerKeyBytes-1] }, []string{"PeerKey"}},
		{"both on any free port", func(c *Config) { c.Listen, c.PeerListen = "127.0.0.1:0", "127.0.0.1:0" }, nil},
		{"hold past the maximum", func(c *Config) { c.HoldTime = MaxHoldTime + 1 }, []string{"HoldTime"}},
		{"negative hold", func(c *Config) { c.HoldTime = -time.Second }, []string{"HoldTime"}},
		{"drain as long as the hold", func(c *Config) { c.HoldTime, c.DrainTimeout = time.Second, time.Second }, []string{"DrainTimeout"}},
		// A hold set alone shortens the default drain rather than failing.
		{"short hold, default drain", func(c *Config) { c.HoldTime = time.Second }, nil},
		{"held past connections", func(c *Config) { c.MaxHeld, c.MaxConnections = 11, 10 }, []string{"MaxHeld"}},
		{"connections past the cap", func(c *Config) { c.MaxConnections = MaxCap + 1 }, []string{"MaxConnections"}},
		{"negative held", func(c *Config) { c.MaxHeld = -1 }, []string{"MaxHeld"}},
		// Few connections set alone lower the default of MaxHeld.
		{"few connections", func(c *Config) { c.MaxConnections = 8 }, nil},
		{"dial of a nanosecond", func(c *Config) { c.DialTimeout = time.Nanosecond }, []string{"DialTimeout"}},
		{"idle under a second", func(c *Config) { c.IdleTimeout = time.Millisecond }, []string{"IdleTimeout"}},
		{"response of a day", func(c *Config) { c.ResponseTimeout = 24 * time.Hour }, nil},
		{"negative body", func(c *Config) { c.BodyTimeout = -1 }, []string{"BodyTimeout"}},
		{"headers too small", func(c *Config) { c.MaxHeaderBytes = 100 }, []string{"MaxHeaderBytes"}},
		{"headers too large", func(c *Config) { c.MaxHeaderBytes = MaxHeaderBytes + 1 }, []string{"MaxHeaderBytes"}},
		{"peer timeout of a microsecond", func(c *Config) { c.PeerTimeout = time.Microsecond }, []string{"PeerTimeout"}},
		{"no peer streams", func(c *Config) { c.PeerStreams = -1 }, []string{"PeerStreams"}},
		{"peer connections past the cap", func(c *Config) { c.MaxPeerConnections = MaxCap + 1 }, []string{"MaxPeerConnections"}},
		{"body timeout of an hour", func(c *Config) { c.ClientBodyTimeout = time.Hour }, []string{"ClientBodyTimeout"}},
		{"buffer of a byte", func(c *Config) { c.BufferSize = 1 }, []string{"BufferSize"}},
		{"total below one body", func(c *Config) { c.BufferSize, c.BufferTotal = 4<<20, 2<<20 }, []string{"BufferTotal"}},
		{"total below the default body", func(c *Config) { c.BufferTotal = 4096 }, []string{"BufferTotal"}},
		{"step down after no timeout", func(c *Config) { c.AppTimeoutStepDown = -3 }, []string{"AppTimeoutStepDown"}},
		{"trusted proxies", func(c *Config) { c.TrustedProxies = []string{"10.0.0.0/8", "192.168.1.7", "fd00::/8"} }, nil},
		{"a trusted proxy that is no address", func(c *Config) { c.TrustedProxies = []string{"10.0.0.0/8", "lb"} }, []string{"TrustedProxies"}},
		// Every wrong field is named, not the first alone.
		{"several wrong", func(c *Config) { c.Mode, c.App, c.HoldTime, c.BufferSize = "udp", "", -1, 1 },
			[]string{"Mode", "App", "HoldTime", "BufferSize"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			var got []string
			for _, e := range unjoin(err) {
				var fe *FieldError
				if !errors.As(e, &fe) || fe.Pkg != "proxy" {
					t.Fatalf("%v is not a proxy FieldError", e)
				}
				got = append(got, fe.Field)
			}
			if !slices.Equal(got, tc.fields) {
				t.Fatalf("fields %q named wrong (%v), want %q", got, err, tc.fields)
			}
			if err == nil {
				d := c.withDefaults()
				if d.DrainTimeout >= d.HoldTime || d.MaxHeld > d.MaxConnections || d.BufferTotal < int64(d.BufferSize) {
					t.Fatalf("defaults break a relation: %+v", d)
				}
			}
		})
	}
}

// unjoin is the errors errors.Join joined (or err alone).
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestConfigDefaults(t *testing.T) {
	d := Config{Listen: ":4041", PeerListen: ":4042", App: "127.0.0.1:8080"}.withDefaults()
	if d.Mode != ModeHTTP || d.HoldTime != DefaultHoldTime || d.DrainTimeout != DefaultDrainTimeout ||
		d.MaxHeld != DefaultMaxHeld || d.MaxConnections != DefaultMaxConnections || d.DialTimeout != DefaultDialTimeout ||
		d.ClientHeaderTimeout != DefaultClientHeaderTimeout || d.ResponseTimeout != DefaultResponseTimeout ||
		d.IdleTimeout != DefaultIdleTimeout || d.BodyTimeout != DefaultBodyTimeout || d.MaxHeaderBytes != DefaultMaxHeaderBytes ||
		d.MaxPeerConnections != DefaultMaxPeerConnections || d.PeerStreams != DefaultPeerStreams || d.PeerTimeout != DefaultPeerTimeout ||
		d.ClientBodyTimeout != DefaultClientBodyTimeout || d.BufferSize != DefaultBufferSize || d.BufferTotal != DefaultBufferTotal ||
		d.AppTimeoutStepDown != DefaultAppTimeoutStepDown || d.ResendUnreadBody {
		t.Fatalf("defaults %+v", d)
	}
}

// The peer port internal/config derives: the next port on the same host.
func TestDefaultPeerListen(t *testing.T) {
	for in, want := range map[string]string{
		":4041": ":4042", "127.0.0.1:0": "127.0.0.1:0", "[::1]:80": "[::1]:81", ":65535": "", "nonsense": "",
	} {
		if got := DefaultPeerListen(in); got != want {
			t.Errorf("DefaultPeerListen(%q) = %q, want %q", in, got, want)
		}
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
