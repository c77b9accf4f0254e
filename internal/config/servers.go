package config

import (
	"net"
	"net/netip"
	"strings"
	"unicode"
)

// validateServers refuses a zookeeper.servers entry whose host cannot be
// one: with white space or a control character, or neither a DNS name nor
// an IP literal. The session would retry such a host for ever; what
// resolves is not checked here (names that do not resolve yet are retried,
// as the key's help says). The entry is quoted with its escapes, so that a
// control character cannot reach the terminal. A malformed host:port is
// the engine's to name (zksession.Config.Validate).
func (c *Config) validateServers() error {
	for _, s := range c.ZooKeeper.Servers {
		host, _, err := net.SplitHostPort(s)
		switch {
		case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 ||
			!printable(s):
			return errorf("zookeeper.servers", "%s has white space or a control character", quote(s))
		case err != nil || host == "":
		case !isDNSName(host) && !isIPLiteral(host):
			return errorf("zookeeper.servers", "%s: %s is neither a DNS name nor an IP address", quote(s), quote(host))
		}
	}
	return nil
}

// isIPLiteral reports an IPv4 or IPv6 address, an IPv6 zone included
// (fe80::1%eth0, written [fe80::1%eth0]:2181).
func isIPLiteral(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

// isDNSName reports a host name as resolvers take it: at most 253 bytes
// (a final dot aside) of dot-separated labels of 1 to 63 letters, digits,
// '-' and '_', none starting or ending with '-'.
func isDNSName(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > maxServerNameBytes {
		return false
	}
	for label := range strings.SplitSeq(host, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}
