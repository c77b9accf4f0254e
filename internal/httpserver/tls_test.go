package httpserver

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/testkit"
	"github.com/electd/electd/internal/testkit/testcert"
)

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

// servedName makes a new TLS connection and returns the common name of the
// certificate the server presented, after checking it against the CA.
func servedName(t *testing.T, addr string, ca *testcert.CA) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestTLSServesAndReloadsRotatedCertificates runs the daemon's HTTP server
// with http.tls_cert_file and http.tls_key_file as a mounted Secret, and a
// real TLS client: the API answers over TLS, a rotation is served from the
// next check on, and a rotation to a broken pair keeps the last good one
// and says so in the log, once.
func TestTLSServesAndReloadsRotatedCertificates(t *testing.T) {
	ca := testcert.NewCA(t, "electd test CA")
	one := ca.Issue(t, "gen-1", "127.0.0.1")
	secret := newSecretDir(t, map[string][]byte{"tls.crt": one.CertPEM, "tls.key": one.KeyPEM})
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var logs testkit.Buffer
	certs, err := config.LoadKeyPair("http.tls_cert_file", secret.path("tls.crt"), "http.tls_key_file", secret.path("tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	certs.Clock, certs.OnReload = clk, LogCertReload(slog.New(slog.NewJSONHandler(&logs, nil)))
	a := startAPI(t, caps{MaxConnections: 256, MaxStreams: 64, MaxWaiters: 64}, certs)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, DisableKeepAlives: true}}
	resp, err := client.Get("https://" + a.addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz over TLS: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || resp.ProtoMajor != 1 {
		t.Fatalf("GET /healthz over TLS: %d %s (TLS %v, %s)", resp.StatusCode, body, resp.TLS != nil, resp.Proto)
	}
	if got := servedName(t, a.addr, ca); got != "gen-1" {
		t.Fatalf("served %s, want gen-1", got)
	}

	two := ca.Issue(t, "gen-2", "127.0.0.1")
	secret.rotate(map[string][]byte{"tls.crt": two.CertPEM, "tls.key": two.KeyPEM})
	if got := servedName(t, a.addr, ca); got != "gen-1" {
		t.Errorf("served %s before the next check, want gen-1 (files looked at once per CheckEvery)", got)
	}
	clk.Advance(time.Second)
	if got := servedName(t, a.addr, ca); got != "gen-2" {
		t.Fatalf("served %s after the rotation, want gen-2", got)
	}
	if !strings.Contains(logs.String(), `"msg":"TLS certificate reloaded"`) {
		t.Errorf("no log line for the reload:\n%s", logs.String())
	}

	// A rotation to a key that does not match: keep serving gen-2.
	three := ca.Issue(t, "gen-3", "127.0.0.1")
	secret.rotate(map[string][]byte{"tls.crt": three.CertPEM, "tls.key": two.KeyPEM})
	clk.Advance(time.Second)
	if got := servedName(t, a.addr, ca); got != "gen-2" {
		t.Fatalf("served %s after a broken rotation, want the last good gen-2", got)
	}
	clk.Advance(time.Second)
	servedName(t, a.addr, ca)
	if n := strings.Count(logs.String(), "do not load; serving the last good certificate"); n != 1 {
		t.Errorf("%d warnings about the broken pair, want 1 (once per change):\n%s", n, logs.String())
	}
}
