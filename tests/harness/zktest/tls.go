package zktest

import (
	"fmt"
	"strings"
)

// TLS makes each server also serve clients over TLS on a port of its own
// (ZooKeeper's secureClientPort, on the Netty connection factory), with PEM
// files the test made (ZooKeeper 3.6+ reads PEM key and trust stores).
type TLS struct {
	// KeyStore is a PEM file holding the server's private key and its
	// certificate chain.
	KeyStore string
	// TrustStore is a PEM file of the CA certificates client certificates
	// must chain to.
	TrustStore string
	// ClientAuth is ZooKeeper's ssl.clientAuth: "need", "want" or "none"
	// (default "none").
	ClientAuth string
}

func (t *TLS) config(port int) string {
	auth := t.ClientAuth
	if auth == "" {
		auth = "none"
	}
	var b strings.Builder
	b.WriteString("serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n")
	fmt.Fprintf(&b, "secureClientPort=%d\n", port)
	b.WriteString("secureClientPortAddress=127.0.0.1\n")
	fmt.Fprintf(&b, "ssl.keyStore.location=%s\nssl.keyStore.type=PEM\n", t.KeyStore)
	fmt.Fprintf(&b, "ssl.trustStore.location=%s\nssl.trustStore.type=PEM\n", t.TrustStore)
	fmt.Fprintf(&b, "ssl.clientAuth=%s\n", auth)
	return b.String()
}

// SecureAddr returns the TLS client address, "127.0.0.1:<secure port>",
// or "" when the ensemble serves no TLS.
func (m *Member) SecureAddr() string {
	if m.secure == nil {
		return ""
	}
	return m.secure.addr()
}

// SecureServers returns each member's SecureAddr, in member order.
func (e *Ensemble) SecureServers() []string {
	out := make([]string, len(e.members))
	for i, m := range e.members {
		out[i] = m.SecureAddr()
	}
	return out
}
