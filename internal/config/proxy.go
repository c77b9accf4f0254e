package config

import (
	"errors"
	"net"

	"github.com/electd/electd/internal/proxy"
)

// The proxy.* keys (docs/DESIGN.md, "Forwarding"): mapped onto
// proxy.Config, which checks them (*proxy.FieldError, named through the
// proxy tags); what is checked here is what only the daemon knows: the
// proxy is off, its address for peers, the other ports.

// proxy maps the keys onto the proxy's configuration; each field set here
// is named by its key's proxy tag (TestProxyTags). Logger, Clock and
// Recorder are the daemon's.
func (c *Config) proxy() proxy.Config {
	p := c.Proxy
	return proxy.Config{
		Mode: proxy.Mode(p.Mode), Listen: p.Listen, PeerListen: p.PeerListen, App: p.App, AppProtocol: proxy.AppProtocol(p.AppProtocol),
		HoldTime: p.HoldTime, DrainTimeout: p.DrainTimeout, MaxHeld: p.MaxHeld, MaxConnections: p.MaxConnections,
		MaxPeerConnections: p.MaxPeerConnections, PeerStreams: p.PeerStreams, PeerTimeout: p.PeerTimeout,
		DialTimeout: p.DialTimeout, ClientHeaderTimeout: p.ClientHeaderTimeout, ClientBodyTimeout: p.ClientBodyTimeout,
		ResponseTimeout: p.ResponseTimeout, IdleTimeout: p.IdleTimeout, BodyTimeout: p.BodyTimeout,
		MaxHeaderBytes: p.MaxHeaderBytes, BufferSize: p.BufferSize, BufferTotal: p.BufferTotal,
		ResendUnreadBody: p.ResendUnreadBody, TrustedProxies: p.TrustedProxies, AppTimeoutStepDown: p.AppTimeoutStepDown,
	}
}

// Stand-ins for the addresses of a proxy that is off, so that its other
// keys are checked all the same.
const (
	standInListen = "127.0.0.1:0"
	standInApp    = "127.0.0.1:1"
)

// validateProxy checks the proxy.* keys, every one of them whether the
// proxy is on or not: a value outside its bounds is a mistake either way.
// proxy.Config.Validate names every wrong field at once.
func (c *Config) validateProxy(errs *errorList) {
	p := c.Proxy
	on := p.Listen != ""
	if !on {
		for _, k := range []string{"proxy.app", "proxy.peer_listen", "proxy.advertise"} {
			if c.str(k) != "" {
				errs.add(errorf(k, "only meaningful with proxy.listen (the proxy is off)"))
			}
		}
	}
	// Zero would be the proxy's default: refuse it, as every other key's
	// zero that means nothing is refused.
	for _, k := range table {
		if k.Proxy == "" || (k.Type != "int" && k.Type != "duration") {
			continue
		}
		if v := k.field(c).Int(); v <= 0 {
			errs.add(errorf(k.Name, "%s is not positive; leave it unset for the default", format(k.field(c), k.Type)))
		}
	}
	pc := c.proxy()
	switch {
	case !on:
		pc.Listen, pc.PeerListen, pc.App = standInListen, standInListen, standInApp
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
	if on && !errs.has("proxy.listen") && !errs.has("proxy.peer_listen") {
		errs.add(c.validateProxyAdvertise(), c.validateProxyPorts())
	}
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

// deriveProxy sets the proxy defaults that follow other keys, where a key
// was not given: proxy.drain_timeout and proxy.max_held follow
// proxy.hold_time and proxy.max_connections as the proxy's own defaults
// do, and those two make room for a drain or a cap that was given.
func (c *Config) deriveProxy(given func(key string) bool) {
	p := &c.Proxy
	switch {
	case !given("proxy.drain_timeout") && p.HoldTime > 0:
		p.DrainTimeout = min(p.DrainTimeout, p.HoldTime/2)
	case !given("proxy.hold_time") && given("proxy.drain_timeout") && p.DrainTimeout >= p.HoldTime:
		p.HoldTime = min(2*p.DrainTimeout, proxy.MaxHoldTime)
	}
	switch {
	case !given("proxy.max_held") && p.MaxConnections > 0:
		p.MaxHeld = min(p.MaxHeld, p.MaxConnections)
	case !given("proxy.max_connections") && given("proxy.max_held") && p.MaxHeld > p.MaxConnections:
		p.MaxConnections = p.MaxHeld
	}
}
