package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCA issues server certificates for 127.0.0.1, made at test time.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "electd test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns the PEM certificate and key of a server certificate with serial.
func (ca *testCA) issue(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "electd"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// secretDir lays files out as the kubelet mounts a Secret: the files are
// symlinks through "..data", itself a symlink to a timestamped directory
// that a rotation replaces by renaming a new "..data" over the old one.
type secretDir struct {
	t   *testing.T
	dir string
	n   int
}

func newSecretDir(t *testing.T, files map[string][]byte) *secretDir {
	s := &secretDir{t: t, dir: t.TempDir()}
	s.rotate(files)
	for name := range files {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(s.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *secretDir) rotate(files map[string][]byte) {
	s.t.Helper()
	s.n++
	ts := filepath.Join(s.dir, "..2026_01_01_00_00_0"+string(rune('0'+s.n)))
	if err := os.Mkdir(ts, 0o755); err != nil {
		s.t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o600); err != nil {
			s.t.Fatal(err)
		}
	}
	tmp := filepath.Join(s.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, "..data")); err != nil {
		s.t.Fatal(err)
	}
}

func (s *secretDir) path(name string) string { return filepath.Join(s.dir, name) }

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// servedSerial makes a new TLS connection and returns the serial of the
// certificate the server presented, after checking it against the CA.
func servedSerial(t *testing.T, addr string, ca *testCA) int64 {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// TestTLSServesAndReloadsRotatedCertificates runs the daemon's HTTP server
// with http.tls_cert_file and http.tls_key_file as a mounted Secret, and a
// real TLS client: the API answers over TLS, a rotation is served from the
// next check on, and a rotation to a broken pair keeps the last good one
// and says so in the log.
func TestTLSServesAndReloadsRotatedCertificates(t *testing.T) {
	ca := newTestCA(t)
	c1, k1 := ca.issue(t, 101)
	secret := newSecretDir(t, map[string][]byte{"tls.crt": c1, "tls.key": k1})
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var logs syncBuffer
	certs, err := newCertReloader(secret.path("tls.crt"), secret.path("tls.key"), clock.now, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	opts := defaultServerOptions()
	opts.TLSCertFile, opts.TLSKeyFile = secret.path("tls.crt"), secret.path("tls.key")
	a := startAPI(t, opts, certs)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.pool}, DisableKeepAlives: true}}
	resp, err := client.Get("https://" + a.addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz over TLS: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || resp.ProtoMajor != 1 {
		t.Fatalf("GET /healthz over TLS: %d %s (TLS %v, %s)", resp.StatusCode, body, resp.TLS != nil, resp.Proto)
	}
	if got := servedSerial(t, a.addr, ca); got != 101 {
		t.Fatalf("serial %d, want 101", got)
	}

	c2, k2 := ca.issue(t, 102)
	secret.rotate(map[string][]byte{"tls.crt": c2, "tls.key": k2})
	if got := servedSerial(t, a.addr, ca); got != 101 {
		t.Errorf("serial %d before the next check, want 101 (checked at most every %v)", got, certCheckEvery)
	}
	clock.advance(certCheckEvery)
	if got := servedSerial(t, a.addr, ca); got != 102 {
		t.Fatalf("serial %d after the rotation, want 102", got)
	}
	if !strings.Contains(logs.String(), `"msg":"TLS certificate reloaded"`) {
		t.Errorf("no log line for the reload:\n%s", logs.String())
	}

	// A rotation to a key that does not match: keep serving 102.
	c3, _ := ca.issue(t, 103)
	secret.rotate(map[string][]byte{"tls.crt": c3, "tls.key": k2})
	clock.advance(certCheckEvery)
	if got := servedSerial(t, a.addr, ca); got != 102 {
		t.Fatalf("serial %d after a broken rotation, want the last good 102", got)
	}
	clock.advance(certCheckEvery)
	servedSerial(t, a.addr, ca)
	if n := strings.Count(logs.String(), "do not load; serving the last good certificate"); n != 1 {
		t.Errorf("%d warnings about the broken pair, want 1 (once per change):\n%s", n, logs.String())
	}
}

func TestCertReloaderRefusesABadPairAtStart(t *testing.T) {
	ca := newTestCA(t)
	c1, _ := ca.issue(t, 1)
	_, k2 := ca.issue(t, 2)
	dir := t.TempDir()
	for name, b := range map[string][]byte{"c": c1, "k": k2, "junk": []byte("not PEM")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ cert, key, errKey string }{
		{"c", "k", "http.tls_cert_file"},
		{"junk", "k", "http.tls_cert_file"},
		{"missing", "k", "http.tls_cert_file"},
		{"c", "missing", "http.tls_key_file"},
	} {
		_, err := newCertReloader(filepath.Join(dir, tt.cert), filepath.Join(dir, tt.key), time.Now, slog.New(slog.DiscardHandler))
		if err == nil || !strings.HasPrefix(err.Error(), tt.errKey+": ") {
			t.Errorf("cert %s, key %s: %v; want an error naming %s", tt.cert, tt.key, err, tt.errKey)
		}
	}
}
