package election_test

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/testkit/testcert"
	"github.com/electd/electd/tests/harness/zktest"
)

// TestZKTLS: with SessionConfig.TLS the session speaks TLS to ZooKeeper's
// secureClientPort, presenting a client certificate the server requires, and
// elects as over plain TCP; a server whose certificate does not chain to the
// configured CA is never joined. Certificates are made at test time.
func TestZKTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "zk-test-ca")
	srv := ca.Issue(t, "zookeeper", "127.0.0.1", "localhost")
	ens := zktest.Start(t, zktest.Options{Servers: 1, TickTime: tickTime, TLS: &zktest.TLS{
		KeyStore:   testcert.Write(t, dir, "keystore.pem", srv.KeyPEM, srv.CertPEM),
		TrustStore: testcert.Write(t, dir, "ca.pem", ca.CertPEM),
		ClientAuth: "need",
	}})
	client := ca.Issue(t, "electd", "electd")
	good := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{client.TLSCertificate(t)}, MinVersion: tls.VersionTLS12}
	secure := ens.SecureServers()

	t.Run("elects over TLS", func(t *testing.T) {
		h := newHarness(t, ens, "/tls/election", election.ModeLatch)
		for _, server := range []string{secure[0], strings.Replace(secure[0], "127.0.0.1", "localhost", 1)} {
			h.start(opts{servers: []string{server}, session: func(c *zksession.Config) { c.TLS = good }})
		}
		l := h.waitOneLeader(15 * time.Second)
		h.waitAgreement(l)
	})

	t.Run("a server the CA did not sign is refused", func(t *testing.T) {
		other := testcert.NewCA(t, "someone-else")
		bad := &tls.Config{RootCAs: other.Pool(), Certificates: []tls.Certificate{client.TLSCertificate(t)}}
		sc := zksession.Config{Servers: []string{secure[0]}, SessionTimeout: sessionTimeout, TLS: bad}
		s, err := zksession.Connect(sc)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// The handshake fails on every attempt; give it several.
		ctx := ctxFor(t, 3*sessionTimeout)
		if err := s.WaitConnected(ctx); err == nil {
			t.Fatal("connected to a server whose certificate the CA did not sign")
		}
	})
}
