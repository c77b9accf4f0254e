package proxy

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"sync"
	"time"
)

// Peers authenticate each other with mutual TLS (docs/design/proxy.md,
// "Forwarding": two ports). Every participant derives one Ed25519 key
// and one self-signed certificate from the election's shared PeerKey;
// both ends of a peer connection present it and accept only a peer that
// presents the same public key. TLS 1.3's CertificateVerify proves that
// the peer holds the private key, which only a holder of PeerKey can
// derive. Without the key a connection never gets past the handshake:
// nothing on the peer port answers in plain text.
//
// Not a CA chain: every participant holds the same key, so a CA would
// sign one certificate for everyone, and checking the chain would prove
// no more than comparing the key does. Comparing the key also needs no
// names, no clock (the validity window is fixed and wide so that every
// participant derives the same bytes) and no rotation of anything but
// the key itself.

// MinPeerKeyBytes is the shortest PeerKey accepted: 32 bytes, as
// `openssl rand -base64 32` prints 44.
const MinPeerKeyBytes = 32

// validatePeerKey requires a key with room for 256 bits of entropy; the
// message never quotes it.
func validatePeerKey(k string) error {
	switch {
	case k == "":
		return errors.New("required: the secret the election's proxies authenticate each other with")
	case len(k) < MinPeerKeyBytes:
		return fmt.Errorf("%d bytes; at least %d (e.g. the output of `openssl rand -base64 32`)", len(k), MinPeerKeyBytes)
	}
	return nil
}

// peerKeyInfo is the HKDF info of the derivation: a new version of the
// derivation changes it, so that two versions never agree by accident.
const peerKeyInfo = "electd peer v1"

// ALPN protocols on the peer port: HTTP/2 for the peer pool, HTTP/1.1 for
// upgrades (WebSocket), and TCP mode's spliced connections.
const (
	alpnH2    = "h2"
	alpnHTTP1 = "http/1.1"
	alpnTCP   = "electd-tcp"
)

var errPeerKey = errors.New("proxy: the peer presented another key than this election's proxy.peer_key")

// peerTLS is the TLS identity of an election's proxies, derived from
// its PeerKey.
type peerTLS struct {
	cert tls.Certificate
	pub  ed25519.PublicKey
}

// newPeerTLS derives the key and certificate from key (derivePeerCert).
func newPeerTLS(key string) (*peerTLS, error) {
	cert, err := derivePeerCert(key)
	if err != nil {
		return nil, err
	}
	return &peerTLS{cert: cert, pub: cert.PrivateKey.(ed25519.PrivateKey).Public().(ed25519.PublicKey)}, nil
}

// derivePeerCert derives from key, deterministically, an Ed25519 key
// (HKDF-SHA256, info peerKeyInfo) and a self-signed certificate with a
// fixed template: every participant derives the same bytes. Ed25519
// signatures are deterministic, so the certificate is too.
func derivePeerCert(key string) (tls.Certificate, error) {
	seed, err := hkdf.Key(sha256.New, []byte(key), nil, peerKeyInfo, ed25519.SeedSize)
	if err != nil {
		return tls.Certificate{}, err
	}
	priv := ed25519.NewKeyFromSeed(seed)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "electd peer"},
		NotBefore:             time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("proxy: derive the peer certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv}, nil
}

// verify accepts a peer that presented exactly this election's public
// key; the handshake has checked that it holds the private key.
func (pt *peerTLS) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) != 1 {
		return errPeerKey
	}
	pub, ok := cs.PeerCertificates[0].PublicKey.(ed25519.PublicKey)
	if !ok || !pub.Equal(pt.pub) {
		return errPeerKey
	}
	return nil
}

func (pt *peerTLS) config(protos ...string) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{pt.cert},
		MinVersion:   tls.VersionTLS13,
		NextProtos:   protos,
		// Verification is VerifyConnection's: the peer's key, not a chain.
		InsecureSkipVerify: true,
		VerifyConnection:   pt.verify,
		// A resumed session would skip the peer's proof of its key for
		// a saving that long-lived peer connections do not need.
		SessionTicketsDisabled: true,
	}
}

// PeerTLSConfig is the TLS configuration with which a participant whose
// PeerKey is key connects to another's peer port, offering the ALPN
// protocol alpn ("h2", "http/1.1"): for tools and tests that speak to a
// peer port as a proxy does.
func PeerTLSConfig(key, alpn string) (*tls.Config, error) {
	if err := validatePeerKey(key); err != nil {
		return nil, err
	}
	pt, err := newPeerTLS(key)
	if err != nil {
		return nil, err
	}
	return pt.config(alpn), nil
}

// serverConfig is the peer port's: a client certificate is required.
func (pt *peerTLS) serverConfig(protos ...string) *tls.Config {
	c := pt.config(protos...)
	c.ClientAuth = tls.RequireAnyClientCert
	return c
}

// peerListener wraps the peer port's connections in TLS. The handshake
// runs on the connection's first read, in its handler's goroutine and
// within its header timeout, never in Accept.
type peerListener struct {
	net.Listener
	cfg *tls.Config
}

func (l *peerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	// Raw reads and writes under TLS (rawio.go), as the client port's.
	return &peerServerConn{Conn: tls.Server(newRawTCP(c), l.cfg)}, nil
}

// peerServerConn answers a client that spoke plain HTTP to the peer port
// as Go's TLS server does (a 400 that names no election), then closes.
type peerServerConn struct {
	*tls.Conn
	once sync.Once
}

func (c *peerServerConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	var re tls.RecordHeaderError
	if err != nil && errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
		c.once.Do(func() {
			_ = re.Conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
			_ = re.Conn.Close()
		})
	}
	return n, err
}

// looksLikeHTTP is net/http's test of a TLS record header that is the
// start of a plain HTTP request.
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "PRI *":
		return true
	}
	return false
}
