package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/fielderr"
)

// Mode is what the proxy forwards.
type Mode string

const (
	// ModeHTTP forwards HTTP/1.1 requests, one at a time per connection,
	// upgrades (WebSocket) included.
	ModeHTTP Mode = "http"
	// ModeTCP splices whole connections, for protocols that are not HTTP
	// (a database primary, a cache).
	ModeTCP Mode = "tcp"
)

// Defaults of Config, and the bounds Validate enforces.
const (
	DefaultHoldTime        = 5 * time.Second
	DefaultDrainTimeout    = 2 * time.Second
	DefaultMaxHeld         = 512
	DefaultMaxConnections  = 1024
	DefaultDialTimeout     = time.Second
	DefaultHeaderTimeout   = 10 * time.Second
	DefaultResponseTimeout = time.Minute
	DefaultIdleTimeout     = 5 * time.Minute
	DefaultBodyTimeout     = time.Minute
	DefaultMaxHeaderBytes  = 32 << 10

	// MinHoldTime: a hand-over takes milliseconds, and half of the hold
	// time is left for the drain (DrainTimeout's default).
	MinHoldTime = 10 * time.Millisecond
	// MaxHoldTime: past five minutes a client has long given up.
	MaxHoldTime = 5 * time.Minute
	// MaxCap bounds MaxHeld and MaxConnections: each connection costs a
	// file descriptor and a goroutine or two.
	MaxCap = 1 << 20
	// MinHeaderBytes and MaxHeaderBytes bound MaxHeaderBytes: a request
	// line and a Host header fit in the first; net/http's default is the
	// second.
	MinHeaderBytes = 1 << 10
	MaxHeaderBytes = 1 << 20
)

// FieldError is what Validate returns: Field names the Config field that
// is wrong, Err says how. The daemon maps Field back to its key.
type FieldError = fielderr.Error

func fieldErr(field, format string, args ...any) error {
	return fielderr.Errorf("proxy", field, format, args...)
}

// Config configures a Proxy (docs/DESIGN.md, "Forwarding").
type Config struct {
	// Mode is ModeHTTP or ModeTCP. Default ModeHTTP.
	Mode Mode
	// Listen is the host:port clients connect to; the caller binds it
	// (Config.Listeners). Required.
	Listen string
	// PeerListen, in TCP mode only, is the host:port at which peers
	// forward connections, each opened by a preamble that carries its hop
	// count (a client's first bytes cannot be told from a preamble on a
	// shared port). Required in TCP mode; must be empty in HTTP mode,
	// where peers use Listen and carry the hop count in a header.
	PeerListen string
	// App is the local application's host:port. Required.
	App string
	// HoldTime is how long a request or connection waits for a leader to
	// send it to before it gets 503 with Retry-After (or is closed).
	// Default 5s; MinHoldTime to MaxHoldTime.
	HoldTime time.Duration
	// DrainTimeout is how long Yield waits for requests in flight to the
	// application before it hands leadership over anyway. Default 2s, or
	// half of HoldTime when that is shorter; less than HoldTime, so that
	// requests held meanwhile outlive the drain.
	DrainTimeout time.Duration
	// MaxHeld caps the requests and connections waiting for a leader at
	// once; past it, 503 (HTTP) or a close (TCP). Default 512, or
	// MaxConnections when that is lower; at most MaxConnections.
	MaxHeld int
	// MaxConnections caps open connections, clients' and peers'. In HTTP
	// mode a newcomer at the cap evicts the connection idle longest, else
	// it is closed; in TCP mode it is closed. Default 1024.
	MaxConnections int
	// DialTimeout bounds connecting to the application or to a peer's
	// proxy; a dial that fails is retried within the hold time. Default 1s.
	DialTimeout time.Duration
	// HeaderTimeout bounds reading a request's headers (HTTP) or a peer's
	// preamble (TCP). Default 10s.
	HeaderTimeout time.Duration
	// ResponseTimeout bounds the wait for the application's response
	// headers once the request is written. Default 1m.
	ResponseTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle between requests,
	// and an upgraded or spliced connection that carried no byte either
	// way for this long. Default 5m.
	IdleTimeout time.Duration
	// BodyTimeout is the longest pause allowed within a request or
	// response body, and the longest a write to a spliced connection may
	// block. Default 1m.
	BodyTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (net/http answers 431
	// past it). Default 32 KiB; MinHeaderBytes to MaxHeaderBytes.
	MaxHeaderBytes int

	// Logger receives a line per step-down and per connection cut when
	// leadership ends. Default: discard.
	Logger *slog.Logger
	// Clock is the time source of the proxy's deadlines: the hold time,
	// the drain, the lease check, retries, the stall and idle guards.
	// Socket deadlines net/http keeps for itself (request headers, idle
	// kept-alive connections, awaiting response headers) are the network
	// poller's; the guard unblocks a stalled read or write with a
	// deadline in the past, which needs no clock. Default clock.Real().
	Clock clock.Clock
	// Recorder counts requests, connections, forwards and holds.
	// Default: none.
	Recorder Recorder
}

// withDefaults fills in every zero field; Validate has passed.
func (c Config) withDefaults() Config {
	if c.Mode == "" {
		c.Mode = ModeHTTP
	}
	if c.HoldTime == 0 {
		c.HoldTime = DefaultHoldTime
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = min(DefaultDrainTimeout, c.HoldTime/2)
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxHeld == 0 {
		c.MaxHeld = min(DefaultMaxHeld, c.MaxConnections)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.DialTimeout, DefaultDialTimeout)
	def(&c.HeaderTimeout, DefaultHeaderTimeout)
	def(&c.ResponseTimeout, DefaultResponseTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.BodyTimeout, DefaultBodyTimeout)
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	if c.Recorder == nil {
		c.Recorder = nopRecorder{}
	}
	return c
}

// Validate checks every field and the relations between them; zero means
// the default. Errors are *FieldError.
func (c Config) Validate() error {
	switch c.Mode {
	case "", ModeHTTP, ModeTCP:
	default:
		return fieldErr("Mode", "%q is not http or tcp", c.Mode)
	}
	if err := validateAddr(c.Listen, true); err != nil {
		return &FieldError{Pkg: "proxy", Field: "Listen", Err: err}
	}
	if err := c.validatePeerListen(); err != nil {
		return &FieldError{Pkg: "proxy", Field: "PeerListen", Err: err}
	}
	if err := validateAddr(c.App, false); err != nil {
		return &FieldError{Pkg: "proxy", Field: "App", Err: err}
	}
	for _, d := range []struct {
		field  string
		v      time.Duration
		lo, hi time.Duration
	}{
		{"HoldTime", c.HoldTime, MinHoldTime, MaxHoldTime},
		{"DrainTimeout", c.DrainTimeout, time.Millisecond, time.Minute},
		{"DialTimeout", c.DialTimeout, time.Millisecond, time.Minute},
		{"HeaderTimeout", c.HeaderTimeout, time.Millisecond, 10 * time.Minute},
		{"ResponseTimeout", c.ResponseTimeout, time.Millisecond, 24 * time.Hour},
		{"IdleTimeout", c.IdleTimeout, time.Second, 24 * time.Hour},
		{"BodyTimeout", c.BodyTimeout, time.Millisecond, 24 * time.Hour},
	} {
		if d.v != 0 && (d.v < d.lo || d.v > d.hi) {
			return fieldErr(d.field, "%v is outside %v to %v", d.v, d.lo, d.hi)
		}
	}
	if c.HoldTime != 0 && c.DrainTimeout != 0 && c.DrainTimeout >= c.HoldTime {
		return fieldErr("DrainTimeout", "%v is not less than HoldTime (%v): requests held while the leader drains would time out first", c.DrainTimeout, c.HoldTime)
	}
	for _, n := range []struct {
		field string
		v     int
	}{{"MaxHeld", c.MaxHeld}, {"MaxConnections", c.MaxConnections}} {
		if n.v < 0 || n.v > MaxCap {
			return fieldErr(n.field, "%d is outside 1 to %d", n.v, MaxCap)
		}
	}
	if c.MaxHeld != 0 && c.MaxConnections != 0 && c.MaxHeld > c.MaxConnections {
		return fieldErr("MaxHeld", "%d is more than MaxConnections (%d): every held request holds a connection", c.MaxHeld, c.MaxConnections)
	}
	if c.MaxHeaderBytes != 0 && (c.MaxHeaderBytes < MinHeaderBytes || c.MaxHeaderBytes > MaxHeaderBytes) {
		return fieldErr("MaxHeaderBytes", "%d is outside %d to %d", c.MaxHeaderBytes, MinHeaderBytes, MaxHeaderBytes)
	}
	return nil
}

func (c Config) validatePeerListen() error {
	tcp := c.Mode == ModeTCP
	switch {
	case !tcp && c.PeerListen != "":
		return errors.New("only meaningful in tcp mode (HTTP peers use Listen); remove it")
	case !tcp:
		return nil
	case c.PeerListen == "":
		return errors.New("required in tcp mode: the port peers forward connections to")
	case c.PeerListen == c.Listen && !strings.HasSuffix(c.Listen, ":0"): // port 0: any free one
		return errors.New("must differ from Listen: a peer's preamble and a client's first bytes cannot share a port")
	}
	return validateAddr(c.PeerListen, true)
}

// validateAddr accepts host:port; a listen address may leave the host
// empty (all interfaces) and use port 0 (any free port: tests).
func validateAddr(s string, listen bool) error {
	if s == "" {
		return errors.New("required (host:port)")
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || strings.ContainsAny(s, " \t\r\n") {
		return fmt.Errorf("%q is not host:port", s)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("%q has a bad port (want 0-65535)", s)
	}
	if !listen && (host == "" || n == 0) {
		return fmt.Errorf("%q needs a host and a port 1-65535", s)
	}
	return nil
}

// Listeners binds Listen and, in TCP mode, PeerListen (peer is nil in
// HTTP mode), for Serve.
func (c Config) Listeners() (client, peer net.Listener, err error) {
	client, err = net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy: listen on %s: %w", c.Listen, err)
	}
	if c.Mode != ModeTCP {
		return client, nil, nil
	}
	peer, err = net.Listen("tcp", c.PeerListen)
	if err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("proxy: listen for peers on %s: %w", c.PeerListen, err)
	}
	return client, peer, nil
}
