package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/internal/clock"
	"github.com/electd/electd/internal/fielderr"
)

// Mode is what the proxy forwards.
type Mode string

const (
	// ModeHTTP forwards HTTP requests (HTTP/1.1 and HTTP/2 with prior
	// knowledge, gRPC and upgrades such as WebSocket included).
	ModeHTTP Mode = "http"
	// ModeTCP splices whole connections, for protocols that are not HTTP
	// (a database primary, a cache).
	ModeTCP Mode = "tcp"
)

// AppProtocol is how HTTP mode speaks to the application.
type AppProtocol string

const (
	// AppHTTP1 sends every request to the application as HTTP/1.1, those
	// that came as HTTP/2 included (docs/design/proxy-app.md, "Any application").
	AppHTTP1 AppProtocol = "http1"
	// AppH2C sends every request but an upgrade (WebSocket) to the
	// application as HTTP/2 with prior knowledge, as gRPC needs. An
	// application that stops then says with its GOAWAY which requests it
	// never took, so that they go to the new leader (docs/design/proxy-app.md,
	// "Forwarding": hand-overs).
	AppH2C AppProtocol = "h2c"
)

// Defaults of Config, and the bounds Validate enforces.
const (
	DefaultHoldTime            = 5 * time.Second
	DefaultDrainTimeout        = 2 * time.Second
	DefaultMaxHeld             = 512
	DefaultMaxConnections      = 1024
	DefaultMaxPeerConnections  = 64
	DefaultPeerStreams         = 256
	DefaultPeerTimeout         = 2 * time.Second
	DefaultDialTimeout         = time.Second
	DefaultClientHeaderTimeout = 10 * time.Second
	DefaultClientBodyTimeout   = 10 * time.Second
	// DefaultResponseTimeout: long enough for any answer that is not a
	// stream (whose headers come first), short enough that an application
	// that hangs costs its clients half a minute before its leader's
	// proxy checks it (AppTimeoutStepDown).
	DefaultResponseTimeout    = 30 * time.Second
	DefaultIdleTimeout        = 5 * time.Minute
	DefaultBodyTimeout        = time.Minute
	DefaultMaxHeaderBytes     = 32 << 10
	DefaultBufferSize         = 1 << 20
	DefaultBufferTotal        = 64 << 20
	DefaultAppTimeoutStepDown = 3

	// MinHoldTime: a hand-over takes milliseconds, and half of the hold
	// time is left for the drain (DrainTimeout's default).
	MinHoldTime = 10 * time.Millisecond
	// MaxHoldTime: past five minutes a client has long given up.
	MaxHoldTime = 5 * time.Minute
	// MaxCap bounds MaxHeld, MaxConnections and MaxPeerConnections: each
	// connection costs a file descriptor and a goroutine or two.
	MaxCap = 1 << 20
	// MaxPeerStreams bounds PeerStreams: what HTTP/2 servers allow.
	MaxPeerStreams = 1 << 16
	// MinHeaderBytes and MaxHeaderBytes bound MaxHeaderBytes: a request
	// line and a Host header fit in the first; net/http's default is the
	// second.
	MinHeaderBytes = 1 << 10
	MaxHeaderBytes = 1 << 20
	// MinBufferSize and MaxBufferSize bound BufferSize; MaxBufferTotal
	// bounds BufferTotal.
	MinBufferSize  = 1 << 10
	MaxBufferSize  = 64 << 20
	MaxBufferTotal = 16 << 30
	// MaxTrustedProxies bounds TrustedProxies.
	MaxTrustedProxies = 256
)

// FieldError is what Validate returns, one per wrong field, joined: Field
// names the Config field that is wrong, Err says how. The daemon maps
// Field back to its key.
type FieldError = fielderr.Error

func fieldErr(field, format string, args ...any) error {
	return fielderr.Errorf("proxy", field, format, args...)
}

// Config configures a Proxy (docs/design/proxy.md, "Forwarding").
type Config struct {
	// Mode is ModeHTTP or ModeTCP. Default ModeHTTP.
	Mode Mode
	// Listen is the host:port clients connect to; the caller binds it
	// (Config.Listeners). Required.
	Listen string
	// PeerListen is the host:port at which the other participants'
	// proxies forward to this one, inside mutual TLS (PeerKey): in HTTP
	// mode over HTTP/2 (and HTTP/1.1 for upgrades), in TCP mode
	// connections opened by a preamble. Never the port of Listen, which
	// takes clients only. Required (internal/config derives it from
	// Listen).
	PeerListen string
	// PeerKey is the secret every participant of the election shares:
	// the peers' mutual TLS key and certificate are derived from it, so
	// only its holders can forward to this proxy or be forwarded to.
	// Required, at least MinPeerKeyBytes bytes.
	PeerKey string
	// App is the local application's host:port. Required.
	App string
	// AppProtocol is how requests reach the application (HTTP mode):
	// AppHTTP1 (the default) or AppH2C.
	AppProtocol AppProtocol
	// HoldTime is how long a request or connection waits for a leader to
	// send it to (or for the leader's proxy to take it) before it gets
	// 503 with Retry-After (or is closed). Default 5s (electd derives it
	// from the session timeout: DeriveHold); MinHoldTime to MaxHoldTime.
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
	// MaxConnections caps clients' open connections. In HTTP mode a
	// newcomer at the cap evicts the connection idle longest, else the
	// one whose request is received slowest, else it is closed; in TCP
	// mode it is closed. Default 1024.
	MaxConnections int
	// MaxPeerConnections caps the connections open on PeerListen, so that
	// clients and peers never take each other's. Default 64.
	MaxPeerConnections int
	// PeerStreams is how many forwards one peer connection carries at
	// once (HTTP/2 streams): the share of this proxy each other proxy is
	// sure of. Default 256.
	PeerStreams int
	// PeerTimeout bounds how long a peer's proxy that stops answering is
	// believed: a connection to it is pinged after PeerTimeout/2 without a
	// frame and given up after another PeerTimeout/2, and a new one is used
	// only once a ping came back. Default 2s.
	PeerTimeout time.Duration
	// DialTimeout bounds connecting to the application or to a peer's
	// proxy; a dial that fails is retried within the hold time. Default 1s.
	DialTimeout time.Duration
	// ClientHeaderTimeout bounds receiving a request's headers, in total
	// (HTTP), or a peer's preamble (TCP). Default 10s.
	ClientHeaderTimeout time.Duration
	// ClientBodyTimeout bounds receiving a body the proxy buffers, in
	// total (408 past it). Default 10s.
	ClientBodyTimeout time.Duration
	// ResponseTimeout bounds the wait for the application's response
	// headers once the request is written. Default 30s.
	ResponseTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle between requests,
	// and an upgraded or spliced connection that carried no byte either
	// way for this long. Default 5m.
	IdleTimeout time.Duration
	// BodyTimeout is the longest pause allowed within a streamed request
	// or response body, and the longest a write to a spliced connection
	// may block. Default 1m.
	BodyTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (net/http answers 431
	// past it). Default 32 KiB; MinHeaderBytes to MaxHeaderBytes.
	MaxHeaderBytes int
	// BufferSize: a request body of a declared length up to this many
	// bytes is received whole (within ClientBodyTimeout) before the
	// request goes anywhere; longer ones, and those of unknown length
	// (streams), are streamed. Default 1 MiB.
	BufferSize int
	// BufferTotal bounds the bytes of all bodies buffered at once; a
	// request waits for room up to the hold time, then gets 503.
	// Default 64 MiB; at least BufferSize.
	BufferTotal int64
	// ResendUnreadBody sends a request with a body again to the new leader
	// when the application closed its connection before it asked for the
	// body (100 Continue). Unsafe for an application that acts before it
	// reads a body: off by default.
	ResendUnreadBody bool
	// TrustedProxies are the CIDRs (or addresses) of front proxies whose
	// X-Forwarded-*/Forwarded headers are kept; from any other client they
	// are replaced. Default none.
	TrustedProxies []string
	// AppTimeoutStepDown is how many of the proxy's own checks of the
	// application in a row, with no answer between them, must fail to step
	// this participant down, as for an application that refuses
	// connections. An answer timeout starts the checks; it never steps
	// down alone (docs/design/proxy-app.md, "Hand-overs"). Default 3.
	AppTimeoutStepDown int
	// HealthURL is what those checks GET (200 to 399 passes): the daemon
	// sets app.health_url's. Default: HEAD / on a new connection to App,
	// any answer passing.
	HealthURL string
	// AppMaxInFlight caps the requests the application has at once (as
	// HAProxy's server maxconn): more are held, within the hold time,
	// until one ends, rather than queued in an accept queue the
	// application may overflow. Upgraded connections count until their
	// 101. Default 0: no limit.
	AppMaxInFlight int

	// Logger receives a line per step-down and per connection cut when
	// leadership ends. Default: discard.
	Logger *slog.Logger
	// Clock is the time source of the proxy's deadlines: the hold time,
	// the drain, the lease check, retries, the body and stall guards, the
	// peers' pings. Socket deadlines net/http keeps for itself (request
	// headers, idle kept-alive connections, awaiting response headers) and
	// HTTP/2's own health checks are the network poller's; the guards
	// unblock a stalled read or write with a deadline in the past, which
	// needs no clock. Default clock.Real().
	Clock clock.Clock
	// Recorder counts requests, connections, forwards and holds.
	// Default: none.
	Recorder Recorder

	trusted []netip.Prefix // TrustedProxies, parsed by withDefaults
}

// DefaultPeerListen is the peer port internal/config derives from Listen
// when none is set: the same host, the next port (port 0 stays 0: any
// free port). "" when listen is not host:port.
func DefaultPeerListen(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return ""
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 65535 {
		return ""
	}
	if n > 0 {
		n++
	}
	return net.JoinHostPort(host, strconv.FormatUint(n, 10))
}

// DeriveHold is the hold time and the drain timeout, zero meaning unset
// (the one statement of the rule; internal/config applies it to its keys).
// crash is how long a leader that dies without handing over takes to be
// replaced, as the election's timing says (0: unknown). A hold time unset
// is crash, so that requests held through a crash reach the next leader,
// or DefaultHoldTime without one; at most MaxHoldTime; or twice a drain
// timeout given that is not shorter (the hand-over's drain must fit in
// what a request may be held). A drain timeout unset is
// DefaultDrainTimeout, or half the hold time when that is shorter.
func DeriveHold(hold, drain, crash time.Duration) (time.Duration, time.Duration) {
	if hold == 0 {
		hold = DefaultHoldTime
		if crash > 0 {
			hold = min(crash, MaxHoldTime)
		}
		if drain >= hold {
			hold = min(2*drain, MaxHoldTime)
		}
	}
	if drain == 0 {
		drain = DefaultDrainTimeout
		if hold > 0 { // a hold time out of range is Validate's to name
			drain = min(drain, hold/2)
		}
	}
	return hold, drain
}

// DeriveHeld is the most open connections and the most held requests,
// zero meaning unset, as DeriveHold: a cap unset is its default, lowered
// (max_held) or raised (max_connections) to fit the other one.
func DeriveHeld(conns, held int) (int, int) {
	if conns == 0 {
		conns = max(DefaultMaxConnections, held)
	}
	if held == 0 {
		held = DefaultMaxHeld
		if conns > 0 { // a cap out of range is Validate's to name
			held = min(held, conns)
		}
	}
	return conns, held
}

// withDefaults fills in every zero field; Validate has passed.
func (c Config) withDefaults() Config {
	if c.Mode == "" {
		c.Mode = ModeHTTP
	}
	if c.AppProtocol == "" {
		c.AppProtocol = AppHTTP1
	}
	c.HoldTime, c.DrainTimeout = DeriveHold(c.HoldTime, c.DrainTimeout, 0)
	c.MaxConnections, c.MaxHeld = DeriveHeld(c.MaxConnections, c.MaxHeld)
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.PeerTimeout, DefaultPeerTimeout)
	def(&c.DialTimeout, DefaultDialTimeout)
	def(&c.ClientHeaderTimeout, DefaultClientHeaderTimeout)
	def(&c.ClientBodyTimeout, DefaultClientBodyTimeout)
	def(&c.ResponseTimeout, DefaultResponseTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.BodyTimeout, DefaultBodyTimeout)
	defInt := func(n *int, v int) {
		if *n == 0 {
			*n = v
		}
	}
	defInt(&c.MaxPeerConnections, DefaultMaxPeerConnections)
	defInt(&c.PeerStreams, DefaultPeerStreams)
	defInt(&c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	defInt(&c.BufferSize, DefaultBufferSize)
	defInt(&c.AppTimeoutStepDown, DefaultAppTimeoutStepDown)
	if c.BufferTotal == 0 {
		c.BufferTotal = max(DefaultBufferTotal, int64(c.BufferSize))
	}
	c.trusted, _ = ParseTrusted(c.TrustedProxies)
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
// the default. It returns every wrong field's *FieldError, joined
// (errors.Join), or nil.
func (c Config) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	switch c.Mode {
	case "", ModeHTTP, ModeTCP:
	default:
		add(fieldErr("Mode", "%q is not http or tcp", c.Mode))
	}
	switch c.AppProtocol {
	case "", AppHTTP1, AppH2C:
	default:
		add(fieldErr("AppProtocol", "%q is not http1 or h2c", c.AppProtocol))
	}
	if err := validateAddr(c.Listen, true); err != nil {
		add(&FieldError{Pkg: "proxy", Field: "Listen", Err: err})
	}
	if err := c.validatePeerListen(); err != nil {
		add(&FieldError{Pkg: "proxy", Field: "PeerListen", Err: err})
	}
	if err := validateAddr(c.App, false); err != nil {
		add(&FieldError{Pkg: "proxy", Field: "App", Err: err})
	}
	if err := validatePeerKey(c.PeerKey); err != nil {
		add(&FieldError{Pkg: "proxy", Field: "PeerKey", Err: err})
	}
	for _, err := range c.validateDurations() {
		add(err)
	}
	for _, err := range c.validateCounts() {
		add(err)
	}
	if _, err := ParseTrusted(c.TrustedProxies); err != nil {
		add(&FieldError{Pkg: "proxy", Field: "TrustedProxies", Err: err})
	}
	return errors.Join(errs...)
}

func (c Config) validateDurations() []error {
	var errs []error
	for _, d := range []struct {
		field  string
		v      time.Duration
		lo, hi time.Duration
	}{
		{"HoldTime", c.HoldTime, MinHoldTime, MaxHoldTime},
		{"DrainTimeout", c.DrainTimeout, time.Millisecond, time.Minute},
		{"PeerTimeout", c.PeerTimeout, 10 * time.Millisecond, time.Minute},
		{"DialTimeout", c.DialTimeout, time.Millisecond, time.Minute},
		{"ClientHeaderTimeout", c.ClientHeaderTimeout, time.Millisecond, 10 * time.Minute},
		{"ClientBodyTimeout", c.ClientBodyTimeout, time.Millisecond, 10 * time.Minute},
		{"ResponseTimeout", c.ResponseTimeout, time.Millisecond, 24 * time.Hour},
		{"IdleTimeout", c.IdleTimeout, time.Second, 24 * time.Hour},
		{"BodyTimeout", c.BodyTimeout, time.Millisecond, 24 * time.Hour},
	} {
		if d.v != 0 && (d.v < d.lo || d.v > d.hi) {
			errs = append(errs, fieldErr(d.field, "%v is outside %v to %v", d.v, d.lo, d.hi))
		}
	}
	if c.HoldTime > 0 && c.DrainTimeout > 0 && c.DrainTimeout >= c.HoldTime {
		errs = append(errs, fieldErr("DrainTimeout", "%v is not less than HoldTime (%v): requests held while the leader drains would time out first", c.DrainTimeout, c.HoldTime))
	}
	return errs
}

func (c Config) validateCounts() []error {
	var errs []error
	for _, n := range []struct {
		field  string
		v      int64
		lo, hi int64
	}{
		{"MaxHeld", int64(c.MaxHeld), 1, MaxCap},
		{"MaxConnections", int64(c.MaxConnections), 1, MaxCap},
		{"MaxPeerConnections", int64(c.MaxPeerConnections), 1, MaxCap},
		{"PeerStreams", int64(c.PeerStreams), 1, MaxPeerStreams},
		{"MaxHeaderBytes", int64(c.MaxHeaderBytes), MinHeaderBytes, MaxHeaderBytes},
		{"BufferSize", int64(c.BufferSize), MinBufferSize, MaxBufferSize},
		{"BufferTotal", c.BufferTotal, MinBufferSize, MaxBufferTotal},
		{"AppTimeoutStepDown", int64(c.AppTimeoutStepDown), 1, 1000},
		{"AppMaxInFlight", int64(c.AppMaxInFlight), 1, MaxCap},
	} {
		if n.v != 0 && (n.v < n.lo || n.v > n.hi) {
			errs = append(errs, fieldErr(n.field, "%d is outside %d to %d", n.v, n.lo, n.hi))
		}
	}
	if c.MaxHeld > 0 && c.MaxConnections > 0 && c.MaxHeld > c.MaxConnections {
		errs = append(errs, fieldErr("MaxHeld", "%d is more than MaxConnections (%d): every held request holds a connection", c.MaxHeld, c.MaxConnections))
	}
	size := int64(c.BufferSize)
	if size == 0 {
		size = DefaultBufferSize
	}
	if c.BufferTotal > 0 && c.BufferTotal < size {
		errs = append(errs, fieldErr("BufferTotal", "%d is less than BufferSize (%d): a body of that size could never be buffered", c.BufferTotal, size))
	}
	return errs
}

func (c Config) validatePeerListen() error {
	switch {
	case c.PeerListen == "":
		return errors.New("required: the port the other participants' proxies forward to")
	case c.PeerListen == c.Listen && !strings.HasSuffix(c.Listen, ":0"): // port 0: any free one
		return errors.New("must differ from Listen: clients' port never takes a forward")
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

// ParseTrusted parses TrustedProxies: CIDRs, or single addresses.
func ParseTrusted(list []string) ([]netip.Prefix, error) {
	if len(list) > MaxTrustedProxies {
		return nil, fmt.Errorf("%d entries, more than %d", len(list), MaxTrustedProxies)
	}
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR (10.0.0.0/8) or an address", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// Listeners binds Listen and PeerListen, for Serve.
func (c Config) Listeners() (client, peer net.Listener, err error) {
	client, err = net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy: listen on %s: %w", c.Listen, err)
	}
	peer, err = net.Listen("tcp", c.PeerListen)
	if err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("proxy: listen for peers on %s: %w", c.PeerListen, err)
	}
	return client, peer, nil
}
