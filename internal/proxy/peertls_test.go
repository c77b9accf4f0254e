package proxy

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// testPeerKey is every test proxy's PeerKey (startProxy); otherPeerKey
// is another election's.
const (
	testPeerKey  = "dGVzdCBwZWVyIGtleSBvZiBlbGVjdGQncyBwcm94eSE="
	otherPeerKey = "b3RoZXIgcGVlciBrZXkgb2YgYW5vdGhlciBlbGVjdGQ="
)

// peerTLSConfig is a client's TLS configuration for a peer port, with
// key's identity; a nil result for key "" presents no certificate.
func peerTLSConfig(t testing.TB, key, proto string) *tls.Config {
	t.Helper()
	if key == "" {
		return &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13, NextProtos: []string{proto}}
	}
	pt, err := newPeerTLS(key)
	if err != nil {
		t.Fatal(err)
	}
	return pt.config(proto)
}

// dialPeerTLS connects to a peer port as a peer with key would.
func dialPeerTLS(t testing.TB, addr, key, proto string) (*tls.Conn, error) {
	t.Helper()
	d := &net.Dialer{Timeout: patience}
	c, err := tls.DialWithDialer(d, "tcp", addr, peerTLSConfig(t, key, proto))
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// newPeerClient speaks HTTP/1.1 to a peer port inside the peers' TLS,
// as a peer's upgrades do.
func newPeerClient(t testing.TB) *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		d := tls.Dialer{Config: peerTLSConfig(t, testPeerKey, alpnHTTP1)}
		return d.DialContext(ctx, "tcp", addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: patience}
}

// newPeerH2Client speaks HTTP/2 to a peer port inside the peers' TLS
// (ALPN h2), as the peer pool does; its URLs are https://.
func newPeerH2Client(t testing.TB) *http.Client {
	var p http.Protocols
	p.SetHTTP2(true)
	tr := &http.Transport{Protocols: &p, TLSClientConfig: peerTLSConfig(t, testPeerKey, alpnH2)}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: patience}
}

// Every participant derives the same certificate from the same key, and
// another one from another key.
func TestPeerCertDerivation(t *testing.T) {
	a, err := derivePeerCert(testPeerKey)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := derivePeerCert(testPeerKey)
	other, _ := derivePeerCert(otherPeerKey)
	if !bytes.Equal(a.Certificate[0], b.Certificate[0]) {
		t.Fatal("one key derived two certificates")
	}
	if bytes.Equal(a.Certificate[0], other.Certificate[0]) {
		t.Fatal("two keys derived one certificate")
	}
	cert, err := x509.ParseCertificate(a.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := cert.PublicKey.(ed25519.PublicKey)
	if !ok || !pub.Equal(a.PrivateKey.(ed25519.PrivateKey).Public()) {
		t.Fatalf("the certificate's key %T is not the derived Ed25519 key", cert.PublicKey)
	}
	if err := cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature); err != nil {
		t.Fatalf("not self-signed: %v", err)
	}
	if y := cert.NotAfter.Year(); cert.NotBefore.Year() != 2000 || y != 2100 {
		t.Fatalf("valid %v to %v, want 2000 to 2100", cert.NotBefore, cert.NotAfter)
	}
}

// Only a peer with the election's key completes the handshake on the
// peer port, in either mode; the proxy's own dial refuses a server with
// another key.
func TestPeerHandshake(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{})
	for _, tc := range []struct {
		name, key, proto string
		ok               bool
	}{
		{"the key, h2", testPeerKey, alpnH2, true},
		{"the key, http/1.1", testPeerKey, alpnHTTP1, true},
		{"another key", otherPeerKey, alpnH2, false},
		{"no certificate", "", alpnH2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := dialPeerTLS(t, tp.peerAddr(), tc.key, tc.proto)
			if err == nil {
				// TLS 1.3: the server checks the client's certificate
				// after the client's handshake ended; a refusal comes as
				// an alert on the first read.
				c.SetReadDeadline(time.Now().Add(patience))
				_, err = c.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
				if err == nil {
					_, err = c.Read(make([]byte, 1))
				}
			}
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatal("accepted")
			}
			if tc.ok && c.ConnectionState().NegotiatedProtocol != tc.proto {
				t.Fatalf("ALPN %q, want %q", c.ConnectionState().NegotiatedProtocol, tc.proto)
			}
		})
	}

	// A server with another key: the proxy's dial refuses it.
	other, err := newPeerTLS(otherPeerKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", other.serverConfig(alpnH2))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
			}()
		}
	}()
	if _, err := tp.dialPeer(context.Background(), ln.Addr().String(), alpnH2); err == nil {
		t.Fatal("the proxy accepted a peer with another key")
	}
}

// Both ends of a peer connection read and write raw under their TLS
// (rawio.go, "A hop's cost"), and carry bytes both ways.
func TestPeerConnectionsAreRaw(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{})
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &peerListener{Listener: tcp, cfg: tp.peerTLS.serverConfig(alpnH2)}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		_ = c.(*peerServerConn).Handshake() // as the first read would
		accepted <- c
	}()
	c, err := tp.dialPeer(context.Background(), tcp.Addr().String(), alpnH2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := recvConn(t, accepted)
	if s == nil {
		t.Fatal("the peer listener stopped accepting")
	}
	defer s.Close()
	if _, ok := c.(*tls.Conn).NetConn().(*rawTCP); !ok {
		t.Errorf("the dialling end reads through %T, want *rawTCP", c.(*tls.Conn).NetConn())
	}
	if _, ok := s.(*peerServerConn).NetConn().(*rawTCP); !ok {
		t.Errorf("the accepting end reads through %T, want *rawTCP", s.(*peerServerConn).NetConn())
	}
	c.SetDeadline(time.Now().Add(patience))
	s.SetDeadline(time.Now().Add(patience))
	go func() { _, _ = c.Write([]byte("ping")) }()
	got := make([]byte, 4)
	if _, err := io.ReadFull(s, got); err != nil || string(got) != "ping" {
		t.Fatalf("the accepting end read %q, %v", got, err)
	}
	go func() { _, _ = s.Write([]byte("pong")) }()
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "pong" {
		t.Fatalf("the dialling end read %q, %v", got, err)
	}
}

// A plain-text request to the peer port, HTTP/1.1 or h2c, learns nothing
// of the election: Go's TLS server's 400, or a closed connection.
func TestPeerPlaintext(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{})
	for _, tc := range []struct {
		name, req string
		want      string // the answer's start; "" for none
	}{
		{"http/1.1", "GET / HTTP/1.1\r\nHost: x\r\n" + HeaderElection + ": /bogus@0x1\r\n" + HeaderLeaderToken + ": 1\r\n\r\n",
			"HTTP/1.0 400 Bad Request"},
		{"h2c", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/1.0 400 Bad Request"},
		{"garbage", "\x00\x01\x02\x03\x04\x05", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", tp.peerAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(patience))
			c.Write([]byte(tc.req))
			got, err := io.ReadAll(c)
			if err != nil && !strings.Contains(err.Error(), "reset") {
				t.Fatalf("read: %v (the connection is still open?)", err)
			}
			if !strings.HasPrefix(string(got), tc.want) {
				t.Fatalf("answer %q, want %q", got, tc.want)
			}
			for _, leak := range []string{testElection, HeaderLeaderID, "Electd", `"a"`} {
				if strings.Contains(string(got), leak) {
					t.Fatalf("the answer %q reveals %q", got, leak)
				}
			}
		})
	}
	if n := len(app.requests()); n != 0 {
		t.Fatalf("the application got %d requests", n)
	}
}
