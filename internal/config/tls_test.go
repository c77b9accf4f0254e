package config

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock/clocktest"
)

// keyPairPEM makes a self-signed certificate for name and its key.
func keyPairPEM(t testing.TB, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// secretDir writes cert.pem and key.pem the way the kubelet mounts a
// Secret: name -> ..data/name, ..data -> a timestamped directory, swapped
// atomically on rotation.
func secretDir(t *testing.T, dir string, gen int, cert, key []byte) {
	t.Helper()
	ts := filepath.Join(dir, "..gen"+string(rune('0'+gen)))
	if err := os.Mkdir(ts, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"cert.pem": cert, "key.pem": key} {
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if gen == 0 {
			if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

func TestKeyPairReloadsARotatedSecret(t *testing.T) {
	dir := t.TempDir()
	cert1, key1 := keyPairPEM(t, "one.test")
	secretDir(t, dir, 0, cert1, key1)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	kp, err := LoadKeyPair("http.tls_cert_file", certFile, "http.tls_key_file", keyFile)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktest.NewFake(time.Unix(1000, 0))
	kp.Clock = clk
	var reloads []string
	kp.OnReload = func(c *tls.Certificate, err error) { reloads = append(reloads, fmt.Sprint(c != nil, err != nil)) }
	leaf := func() string {
		t.Helper()
		c, err := kp.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		x, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return x.Subject.CommonName
	}
	if got := leaf(); got != "one.test" {
		t.Fatalf("first certificate %s", got)
	}

	cert2, key2 := keyPairPEM(t, "two.test")
	secretDir(t, dir, 1, cert2, key2)
	if got := leaf(); got != "one.test" {
		t.Errorf("before the next look: %s, want one.test (files looked at once per CheckEvery)", got)
	}
	clk.Advance(kp.CheckEvery)
	if got := leaf(); got != "two.test" {
		t.Errorf("after rotation: %s, want two.test", got)
	}

	// A broken rotation (a key that does not match) keeps the last good pair.
	cert3, _ := keyPairPEM(t, "three.test")
	secretDir(t, dir, 2, cert3, key2)
	clk.Advance(kp.CheckEvery)
	if got := leaf(); got != "two.test" {
		t.Errorf("after a bad rotation: %s, want the last good two.test", got)
	}
	clk.Advance(kp.CheckEvery)
	leaf()
	if got := strings.Join(reloads, " "); got != "true false false true" {
		t.Errorf("reloads reported %q, want one good and one bad (once per change)", got)
	}
	if c, err := kp.GetClientCertificate(nil); err != nil || c == nil {
		t.Errorf("GetClientCertificate: %v", err)
	}
}

func TestLoadKeyPairNamesTheKey(t *testing.T) {
	dir := t.TempDir()
	cert, key := keyPairPEM(t, "a.test")
	_, otherKey := keyPairPEM(t, "b.test")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, k, k2, junk := write("c", cert), write("k", key), write("k2", otherKey), write("junk", []byte("not PEM"))
	for _, tc := range []struct {
		cert, key, wantKey string
	}{
		{junk, k, "cert"},
		{k, k, "cert"}, // a key is no certificate
		{c, junk, "key"},
		{c, k2, "key"}, // not the certificate's key
		{c, filepath.Join(dir, "none"), "key"},
		{filepath.Join(dir, "none"), k, "cert"},
	} {
		_, err := LoadKeyPair("cert", tc.cert, "key", tc.key)
		if err == nil || !bytes.HasPrefix([]byte(err.Error()), []byte(tc.wantKey+": ")) {
			t.Errorf("LoadKeyPair(%s, %s) = %v; want an error naming %s", filepath.Base(tc.cert), filepath.Base(tc.key), err, tc.wantKey)
		}
	}
	if _, err := LoadKeyPair("cert", c, "key", k); err != nil {
		t.Error(err)
	}
}

func TestZooKeeperTLS(t *testing.T) {
	cert, key := keyPairPEM(t, "zk.test")
	dir := t.TempDir()
	cf, kf := filepath.Join(dir, "c"), filepath.Join(dir, "k")
	if err := os.WriteFile(cf, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kf, key, 0o600); err != nil {
		t.Fatal(err)
	}
	c := Defaults()
	if tc, err := c.zooKeeperTLS(); tc != nil || err != nil {
		t.Errorf("without zookeeper.tls: %v, %v", tc, err)
	}
	c.ZooKeeper.TLS = true
	tc, err := c.zooKeeperTLS()
	if err != nil || tc == nil || tc.RootCAs != nil || tc.GetClientCertificate != nil || tc.MinVersion == 0 {
		t.Errorf("tls alone: %+v, %v; want system roots, no client certificate", tc, err)
	}
	c.ZooKeeper.TLSCAFile, c.ZooKeeper.TLSCertFile, c.ZooKeeper.TLSKeyFile, c.ZooKeeper.TLSServerName = cf, cf, kf, "zk.test"
	tc, err = c.zooKeeperTLS()
	if err != nil || tc.RootCAs == nil || tc.GetClientCertificate == nil || tc.ServerName != "zk.test" {
		t.Errorf("every tls key: %+v, %v", tc, err)
	}
	// The client certificate verifies against the CA file: the pair is whole.
	got, err := tc.GetClientCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := x509.ParseCertificate(got.Certificate[0])
	if _, err := x.Verify(x509.VerifyOptions{Roots: tc.RootCAs, DNSName: "zk.test"}); err != nil {
		t.Errorf("client certificate does not verify against the CA file: %v", err)
	}
}
