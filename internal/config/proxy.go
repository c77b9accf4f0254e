package config

import (
	"time"

	"errors"
	"net"
	"strings"

	"github.com/electd/electd/internal/proxy"
)

// The proxy.* keys (docs/design/proxy.md, "Forwarding"): mapped onto
// proxy.Config, which checks them (*proxy.FieldError, named through the
// proxy tags); what is checked here is what only the daemon knows: the
// proxy is off, its address for peers, the other ports.

// proxy maps the keys onto the proxy's configuration; each field set here
// is named by its key's proxy tag (TestProxyTags). Logger, Clock and
// Recorder are the daemon's.
func (c *Config) proxy() proxy.Config {
	p := c.Proxy
	return proxy.Config{
		Mode: proxy.Mode(p.Mode), Listen: p.Listen, PeerListen: p.PeerListen, PeerKey: p.PeerKey, App: p.App, AppProtocol: proxy.AppProtocol(p.AppProtocol),
		HoldTime: p.HoldTime, DrainTimeout: p.DrainTimeout, MaxHeld: p.MaxHeld, MaxConnections: p.MaxConnections,
		MaxPeerConnections: p.MaxPeerConnections, PeerStreams: p.PeerStreams, PeerTimeout: p.PeerTimeout,
		DialTimeout: p.DialTimeout, ClientHeaderTimeout: p.ClientHeaderTimeout, ClientBodyTimeout: p.ClientBodyTimeout,
		ResponseTimeout: p.ResponseTimeout, IdleTimeout: p.IdleTimeout, BodyTimeout: p.BodyTimeout,
		MaxHeaderBytes: p.MaxHeaderBytes, BufferSize: p.BufferSize, BufferTotal: p.BufferTotal,
		ResendUnreadBody: p.ResendUnreadBody, TrustedProxies: p.TrustedProxies, AppTimeoutStepDown: p.AppTimeoutStepDown,
		AppMaxInFlight: p.AppMaxInFlight,
	}
}

// Stand-ins for the peer address of a proxy whose own is wrong, so that
// its other keys are checked all the same.
const standInListen = "127.0.0.1:0"

// standInPeerKey stands in for a wrong proxy.peer_key, as standInListen.
var standInPeerKey = strings.Repeat("k", proxy.MinPeerKeyBytes)

// validateProxy checks the proxy.* keys. Without proxy.listen the proxy
// is off and every other proxy key that a source set is refused alike, as
// zookeeper.tls_* are without zookeeper.tls: a key that does nothing was
// set by mistake (proxy.listen forgotten, or a value meant for another
// participant), and accepting some while refusing others would make the
// rule a list to learn. given reports whether a source set a key; podIP
// is $POD_IP.
// proxy.Config.Validate names every wrong field at once.
func (c *Config) validateProxy(errs *errorList, given func(string) bool, podIP string) {
	p := c.Proxy
	if p.Listen == "" {
		for _, k := range table {
			if k.needsProxy() && given(k.Name) {
				errs.add(errorf(k.Name, "only meaningful with proxy.listen (the proxy is off)"))
			}
		}
		return
	}
	// Zero would be the proxy's default: refuse it, as every other key's
	// zero that means nothing is refused. A key whose default is 0 says
	// something by it (proxy.app_max_in_flight: no limit).
	for _, k := range table {
		if k.Proxy == "" || (k.Type != "int" && k.Type != "duration") {
			continue
		}
		if v := k.field(c).Int(); v < 0 || v == 0 && k.Default != "0" {
			errs.add(errorf(k.Name, "%s is not positive; leave it unset for the default", format(k.field(c), k.Type)))
		}
	}
	pc := c.proxy()
	if err := c.validatePeerKey(); err != nil {
		errs.add(err)
		pc.PeerKey = standInPeerKey // named once, by its own key
	}
	switch {
	case p.PeerListen == "" && validAddr(p.Listen):
		// Derived from proxy.listen, which has no next port.
		errs.add(errorf("proxy.peer_listen", "required: %s has no next port to take peers on", quote(p.Listen)))
		pc.PeerListen = standInListen
	case p.PeerListen == "":
		pc.PeerListen = standInListen // proxy.listen is wrong: named once
	}
	for _, ke := range c.fieldErrors(pc.Validate()) {
		if !errs.has(keyName(ke)) {
			errs.add(ke)
		}
	}
	// A wrong address for peers is named once, not again as what follows.
	if !errs.has("proxy.listen") && !errs.has("proxy.peer_listen") {
		errs.add(c.validateProxyAdvertise(), c.validateProxyPorts())
		if !errs.has("proxy.app") {
			errs.add(c.validateProxyLoop(podIP))
		}
	}
}

// validatePeerKey requires proxy.peer_key with the proxy: without it the
// peer port would take forwards from anyone who reaches it.
func (c *Config) validatePeerKey() error {
	p := c.Proxy
	key := "proxy.peer_key"
	if p.PeerKeyFile != "" {
		key = "proxy.peer_key_file"
	}
	switch {
	case p.PeerKey == "":
		return errorf(key, "required with proxy.listen: the secret every participant's proxy shares to authenticate the others; "+
			"set --proxy.peer_key, ELECTD_PROXY_PEER_KEY or proxy.peer_key_file to the same value on every participant, "+
			"e.g. the output of `openssl rand -base64 32`")
	case len(p.PeerKey) < proxy.MinPeerKeyBytes:
		return errorf(key, "%d bytes; at least %d, e.g. the output of `openssl rand -base64 32`", len(p.PeerKey), proxy.MinPeerKeyBytes)
	case !printable(p.PeerKey):
		return errorf(key, "has a control character or is not UTF-8")
	}
	return nil
}

func validAddr(s string) bool {
	_, _, err := net.SplitHostPort(s)
	return err == nil
}

// keyName is the key a KeyError names, or "".
func keyName(err error) string {
	var ke *KeyError
	if errors.As(err, &ke) {
		return ke.Key
	}
	return ""
}

// deriveProxyPeer sets proxy.peer_listen, when the proxy is on and the key
// was not set: the next port on proxy.listen's host.
func (c *Config) deriveProxyPeer() {
	p := &c.Proxy
	if p.Listen != "" && p.PeerListen == "" {
		p.PeerListen = proxy.DefaultPeerListen(p.Listen)
	}
}

// deriveProxyAdvertise sets proxy.advertise, when the proxy is on and the
// key was not set: the pod's IP ($POD_IP, the downward API's
// status.podIP) with the port peers connect to, else that address itself
// when it names a host others can dial. Nothing, when neither does: the
// check then asks for the key.
func (c *Config) deriveProxyAdvertise(podIP string) {
	c.deriveProxyPeer()
	p := &c.Proxy
	if p.Listen == "" || p.Advertise != "" {
		return
	}
	host, port, err := net.SplitHostPort(p.PeerListen)
	switch {
	case err != nil:
	case podIP != "":
		p.Advertise = net.JoinHostPort(podIP, port)
	case host != "" && !unspecified(host):
		p.Advertise = p.PeerListen
	}
}

// unspecified reports a host that means "every address" (0.0.0.0, ::).
func unspecified(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// validateProxyAdvertise checks proxy.advertise as an address to dial
// (the engine checks it as published text): a host, and a port; port 0
// only when the proxy's own port is 0, whose bound port it stands for.
func (c *Config) validateProxyAdvertise() error {
	p := c.Proxy
	if p.Advertise == "" {
		return errorf("proxy.advertise", "required: %s names no address the other participants can dial; "+
			"set proxy.advertise (e.g. $(POD_IP):4042) or the environment variable POD_IP", quote(p.PeerListen))
	}
	host, port, err := net.SplitHostPort(p.Advertise)
	switch {
	case err != nil || host == "":
		return errorf("proxy.advertise", "%s is not host:port", quote(p.Advertise))
	case unspecified(host):
		return errorf("proxy.advertise", "%s names every address, not one the other participants can dial", quote(p.Advertise))
	case port == "0":
		if _, own, err := net.SplitHostPort(p.PeerListen); err == nil && own == "0" {
			return nil
		}
	}
	if err := checkPort(port); err != nil {
		return errorf("proxy.advertise", "%v", err)
	}
	return nil
}

// validateProxyPorts refuses a proxy port that http.addr or the other
// proxy port already takes: electd would fail to start.
func (c *Config) validateProxyPorts() error {
	for _, k := range []string{"proxy.listen", "proxy.peer_listen"} {
		if clash(c.str(k), c.HTTP.Addr) {
			return errorf(k, "%s takes the port of http.addr (%s)", quote(c.str(k)), quote(c.HTTP.Addr))
		}
	}
	if clash(c.Proxy.PeerListen, c.Proxy.Listen) {
		return errorf("proxy.peer_listen", "%s takes the port of proxy.listen (%s): clients' port takes no forward",
			quote(c.Proxy.PeerListen), quote(c.Proxy.Listen))
	}
	return nil
}

// clash reports two listen addresses on one port and overlapping hosts.
func clash(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	all := func(h string) bool { return h == "" || unspecified(h) }
	return ha == hb || all(ha) || all(hb)
}

// CrashTime is how long a leader whose electd dies without resigning
// (SIGKILL, a node lost) takes to be replaced, for a session timeout: an
// unset proxy.hold_time covers it (docs/design/proxy.md, "Hold").
// ZooKeeper expires the session after its timeout plus up to a tick or so
// (its expiry runs in tick-sized buckets; a tick is at most a tenth of a
// timeout it grants, so half the timeout bounds it generously), and
// then crashMargin covers the election and every view's update.
func CrashTime(session time.Duration) time.Duration {
	return session*3/2 + crashMargin
}

// crashMargin: the next candidate sees the node's deletion, takes
// leadership and publishes it; every participant's watch fires. Tens of
// milliseconds on a healthy ensemble; 2s leaves room for a loaded one.
const crashMargin = 2 * time.Second

// deriveProxy sets the proxy defaults that follow other keys, where a key
// was not given, by the proxy's own rules (proxy.DeriveHold, DeriveHeld).
func (c *Config) deriveProxy(given func(key string) bool) {
	p := &c.Proxy
	keep := func(key string, v time.Duration) time.Duration {
		if given(key) {
			return v
		}
		return 0
	}
	keepInt := func(key string, v int) int {
		if given(key) {
			return v
		}
		return 0
	}
	hold, drain := proxy.DeriveHold(keep("proxy.hold_time", p.HoldTime), keep("proxy.drain_timeout", p.DrainTimeout),
		CrashTime(c.ZooKeeper.SessionTimeout))
	conns, held := proxy.DeriveHeld(keepInt("proxy.max_connections", p.MaxConnections), keepInt("proxy.max_held", p.MaxHeld))
	// A key given stays as given, even 0: Validate names it.
	p.HoldTime = keepGiven(given("proxy.hold_time"), p.HoldTime, hold)
	p.DrainTimeout = keepGiven(given("proxy.drain_timeout"), p.DrainTimeout, drain)
	p.MaxConnections = keepGiven(given("proxy.max_connections"), p.MaxConnections, conns)
	p.MaxHeld = keepGiven(given("proxy.max_held"), p.MaxHeld, held)
}

func keepGiven[T any](given bool, v, derived T) T {
	if given {
		return v
	}
	return derived
}

// validateProxyLoop refuses a proxy.app that is this electd itself: its
// proxy's own ports (every request would come back to the proxy, each
// holding a connection, until the hold time ran out) or its API.
func (c *Config) validateProxyLoop(podIP string) error {
	p := c.Proxy
	for _, own := range []struct{ key, addr string }{
		{"proxy.listen", p.Listen}, {"proxy.peer_listen", p.PeerListen}, {"http.addr", c.HTTP.Addr},
	} {
		if dialsListener(p.App, own.addr, podIP) {
			return errorf("proxy.app", "%s is this electd's own %s (%s): the proxy would send every request to itself; "+
				"set the application's address, e.g. 127.0.0.1:8080", quote(p.App), own.key, quote(own.addr))
		}
	}
	if p.Advertise != "" && p.App == p.Advertise {
		return errorf("proxy.app", "%s is this proxy's proxy.advertise: the proxy would send every request to itself; "+
			"set the application's address, e.g. 127.0.0.1:8080", quote(p.App))
	}
	return nil
}

// dialsListener reports whether dialing addr reaches a listener on listen:
// the same port, and a host that is the listener's: equal, or both this
// machine by its usual names (localhost, 127.0.0.1, ::1, and 0.0.0.0,
// which dials this machine); or, when the listener takes every address (an
// empty host, 0.0.0.0, ::), any loopback address or the pod's IP too.
func dialsListener(addr, listen, podIP string) bool {
	dh, dp, err1 := net.SplitHostPort(addr)
	lh, lp, err2 := net.SplitHostPort(listen)
	if err1 != nil || err2 != nil || dp != lp || dp == "0" {
		return false
	}
	if lh == "" || unspecified(lh) {
		ip := net.ParseIP(dh)
		return dh == "" || thisHost(dh) || (ip != nil && ip.IsLoopback()) || (podIP != "" && sameHost(dh, podIP))
	}
	return sameHost(dh, lh) || (thisHost(dh) && thisHost(lh))
}

// thisHost reports a host that names this machine as a listener on
// localhost sees it.
func thisHost(h string) bool {
	return strings.EqualFold(h, "localhost") || sameHost(h, "127.0.0.1") || sameHost(h, "::1") || unspecified(h)
}

// sameHost compares hosts as addresses when both are IPs (::ffff:127.0.0.1
// is 127.0.0.1), else as names.
func sameHost(a, b string) bool {
	ia, ib := net.ParseIP(a), net.ParseIP(b)
	if ia != nil && ib != nil {
		return ia.Equal(ib)
	}
	return strings.EqualFold(a, b)
}
