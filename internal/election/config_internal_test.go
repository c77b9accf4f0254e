package election

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/election/zksession"
)

func TestSessionHexUnsigned(t *testing.T) {
	// ZooKeeper prints session ids unsigned; ids with the top bit set (server
	// id >= 128) must not print as negative numbers.
	if got := sessionHex(-0x7f00000000000001); got != "0x80ffffffffffffff" {
		t.Errorf("sessionHex = %s", got)
	}
	if got := sessionHex(0x100004749370000); got != "0x100004749370000" {
		t.Errorf("sessionHex = %s", got)
	}
}

func validSession() zksession.Config {
	return zksession.Config{Servers: []string{"zk-0:2181"}, SessionTimeout: 10 * time.Second}
}

func validElection() Config {
	return Config{Path: "/services/web", ID: "web-1"}
}

// fieldOf returns the field a Validate error names, or "" for nil; it fails
// the test for an error that is no *FieldError or spans lines.
func fieldOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("%v is not a *FieldError", err)
	}
	if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || len(msg) > 300 {
		t.Errorf("error is not one short line: %q", msg)
	}
	return fe.Field
}

func TestSessionConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*zksession.Config)
		field string // "" when valid
	}{
		{"valid", func(*zksession.Config) {}, ""},
		{"default timeout", func(c *zksession.Config) { c.SessionTimeout = 0 }, ""},
		{"no servers", func(c *zksession.Config) { c.Servers = nil }, "Servers"},
		{"port 0", func(c *zksession.Config) { c.Servers = []string{"zk:0"} }, "Servers"},
		{"port 99999", func(c *zksession.Config) { c.Servers = []string{"zk:99999"} }, "Servers"},
		{"timeout 1s", func(c *zksession.Config) { c.SessionTimeout = time.Second }, ""},
		{"timeout below 2 ticks", func(c *zksession.Config) { c.SessionTimeout = 500 * time.Millisecond }, "SessionTimeout"},
		{"negative timeout", func(c *zksession.Config) { c.SessionTimeout = -time.Second }, "SessionTimeout"},
		{"timeout at the maximum", func(c *zksession.Config) { c.SessionTimeout = zksession.MaxSessionTimeout }, ""},
		// Issue 14: 597 h wrapped to a negative int32 of milliseconds in the
		// client and never connected while /healthz said 200.
		{"timeout 597h", func(c *zksession.Config) { c.SessionTimeout = 597 * time.Hour }, "SessionTimeout"},
		{"timeout past the maximum", func(c *zksession.Config) { c.SessionTimeout = zksession.MaxSessionTimeout + time.Millisecond }, "SessionTimeout"},
		{"auth", func(c *zksession.Config) { c.Auth = "electd:s3cret" }, ""},
		{"auth without colon", func(c *zksession.Config) { c.Auth = "s3cret" }, "Auth"},
		{"auth without user", func(c *zksession.Config) { c.Auth = ":s3cret" }, "Auth"},
		{"auth without password", func(c *zksession.Config) { c.Auth = "electd:" }, "Auth"},
		{"auth with newline", func(c *zksession.Config) { c.Auth = "electd:s3\ncret" }, "Auth"},
		{"auth too long", func(c *zksession.Config) { c.Auth = "u:" + strings.Repeat("p", zksession.MaxAuthBytes) }, "Auth"},
		{"negative renew", func(c *zksession.Config) { c.RenewInterval = -1 }, "RenewInterval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validSession()
			tc.edit(&c)
			err := c.Validate()
			if got := fieldOf(t, err); got != tc.field {
				t.Errorf("Validate() = %v, want a %q field error", err, tc.field)
			}
			if err != nil && c.Auth != "" && strings.Contains(err.Error(), c.Auth) {
				t.Errorf("error quotes the credentials: %v", err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"valid", func(*Config) {}, ""},
		{"relative path", func(c *Config) { c.Path = "services/web" }, "Path"},
		{"empty path", func(c *Config) { c.Path = "" }, "Path"},
		{"path at the limit", func(c *Config) { c.Path = "/" + long(MaxPathBytes-1) }, ""},
		// Issue 14: paths near 1 MB made ~70 reconnects/s (jute.maxbuffer).
		{"path of 1 MiB", func(c *Config) { c.Path = "/" + long(1<<20) }, "Path"},
		{"path with DEL", func(c *Config) { c.Path = "/a\x7fb" }, "Path"},
		{"path with C1", func(c *Config) { c.Path = "/a\u0085b" }, "Path"},
		{"path not UTF-8", func(c *Config) { c.Path = "/a\xffb" }, "Path"},
		{"unknown mode", func(c *Config) { c.Mode = "lottery" }, "Mode"},
		{"empty id", func(c *Config) { c.ID = "" }, "ID"},
		{"pod name", func(c *Config) { c.ID = long(253) }, ""},
		{"id at the limit", func(c *Config) { c.ID = long(MaxIDBytes) }, ""},
		// Issue 14: a 2 MB id silently never joined.
		{"id of 2 MB", func(c *Config) { c.ID = long(2 << 20) }, "ID"},
		{"id past the limit", func(c *Config) { c.ID = long(MaxIDBytes + 1) }, "ID"},
		// Issue 14: ids with control characters came back raw from
		// /leader?format=text.
		{"id with newline", func(c *Config) { c.ID = "web-1\nleader: evil" }, "ID"},
		{"id with ESC", func(c *Config) { c.ID = "web-1\x1b[2J" }, "ID"},
		{"id with NUL", func(c *Config) { c.ID = "web\x001" }, "ID"},
		{"id with C1", func(c *Config) { c.ID = "web\u009b1" }, "ID"},
		{"id not UTF-8", func(c *Config) { c.ID = "web-\xff" }, "ID"},
		{"id in Unicode", func(c *Config) { c.ID = "wéb-1 ☃" }, ""},
		{"advertise", func(c *Config) { c.Advertise = "http://10.0.0.7:8080" }, ""},
		{"advertise with newline", func(c *Config) { c.Advertise = "a\nb" }, "Advertise"},
		{"advertise too long", func(c *Config) { c.Advertise = long(MaxAdvertiseBytes + 1) }, "Advertise"},
		{"proxy", func(c *Config) { c.Proxy = "10.0.0.7:4041" }, ""},
		{"proxy with newline", func(c *Config) { c.Proxy = "a\nb" }, "Proxy"},
		{"proxy too long", func(c *Config) { c.Proxy = long(MaxAdvertiseBytes + 1) }, "Proxy"},
		{"term outside selector", func(c *Config) { c.Term = time.Minute }, "Term"},
		{"term in race mode", func(c *Config) { c.Mode, c.Term = ModeRace, time.Minute }, "Term"},
		{"term", func(c *Config) { c.Mode, c.Term = ModeSelector, time.Minute }, ""},
		{"negative term", func(c *Config) { c.Mode, c.Term = ModeSelector, -time.Minute }, "Term"},
		// Issue 14: 1 ns made 3 selectors take leadership 1,335 times in 10 s.
		{"term 1ns", func(c *Config) { c.Mode, c.Term = ModeSelector, time.Nanosecond }, "Term"},
		{"term below the minimum", func(c *Config) { c.Mode, c.Term = ModeSelector, MinTerm-1 }, "Term"},
		{"term at the maximum", func(c *Config) { c.Mode, c.Term = ModeSelector, MaxTerm }, ""},
		{"term past the maximum", func(c *Config) { c.Mode, c.Term = ModeSelector, MaxTerm+1 }, "Term"},
		{"unknown on_suspend", func(c *Config) { c.OnSuspend = "panic" }, "OnSuspend"},
		{"negative claim delay", func(c *Config) { c.ClaimDelay = -1 }, "ClaimDelay"},
		{"claim delay at the maximum", func(c *Config) { c.ClaimDelay = MaxClaimDelay }, ""},
		{"claim delay past the maximum", func(c *Config) { c.ClaimDelay = MaxClaimDelay + 1 }, "ClaimDelay"},
		{"negative fencing offset", func(c *Config) { c.FencingOffset = -1 }, "FencingOffset"},
		{"fencing offset at the maximum", func(c *Config) { c.FencingOffset = MaxFencingOffset }, ""},
		// Issue 14: 2^63-1 gave negative tokens.
		{"fencing offset 2^63-1", func(c *Config) { c.FencingOffset = 1<<63 - 1 }, "FencingOffset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validElection()
			tc.edit(&c)
			err := c.Validate()
			if got := fieldOf(t, err); got != tc.field {
				t.Errorf("Validate() = %v, want a %q field error", err, tc.field)
			}
		})
	}
}

// The largest offset cannot overflow with any czxid an ensemble reaches
// before epoch 2^30.
func TestFencingOffsetBoundCannotOverflow(t *testing.T) {
	const maxCzxid = int64(1<<30-1)<<32 | (1<<32 - 1)
	if tok := maxCzxid + MaxFencingOffset; tok < 0 {
		t.Errorf("czxid %d + %d overflows to %d", maxCzxid, int64(MaxFencingOffset), tok)
	}
}

// The maximum session timeout survives the client's int32 milliseconds.
func TestMaxSessionTimeoutFitsInt32Millis(t *testing.T) {
	if ms := zksession.MaxSessionTimeout.Milliseconds(); int64(int32(ms)) != ms {
		t.Errorf("%v does not fit in int32 milliseconds", zksession.MaxSessionTimeout)
	}
}
