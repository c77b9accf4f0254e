package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"sync"
	"time"

	"github.com/electd/electd/internal/clock"
)

// zooKeeperTLS is the TLS configuration of the zookeeper.tls_* keys, or nil
// without zookeeper.tls. The CA file is read once; the client certificate
// is reloaded when its files change.
func (c *Config) zooKeeperTLS() (*tls.Config, error) {
	z := c.ZooKeeper
	if !z.TLS {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: z.TLSServerName}
	if z.TLSCAFile != "" {
		b, err := readFile("zookeeper.tls_ca_file", z.TLSCAFile, MaxCertFileBytes)
		if err != nil {
			return nil, err
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(b) {
			return nil, errorf("zookeeper.tls_ca_file", "%s holds no PEM certificate", quote(z.TLSCAFile))
		}
	}
	if z.TLSCertFile != "" {
		kp, err := LoadKeyPair("zookeeper.tls_cert_file", z.TLSCertFile, "zookeeper.tls_key_file", z.TLSKeyFile)
		if err != nil {
			return nil, err
		}
		t.GetClientCertificate = kp.GetClientCertificate
	}
	return t, nil
}

// KeyPair is a certificate and its private key from two PEM files, read
// again after either file changes (a mounted Kubernetes Secret is rotated by
// swapping a "..data" symlink, so the files are compared by identity and
// time through the symlinks). The files are looked at most once per
// CheckEvery, so a flood of handshakes costs one stat per interval. A reload
// that fails, e.g. between the writes of the two files, keeps the last good
// pair and is reported once per change of the files.
type KeyPair struct {
	certKey, certFile, keyKey, keyFile string

	// Clock times CheckEvery. Default clock.Real().
	Clock clock.Clock
	// CheckEvery bounds how often the files are looked at. Default 1s.
	CheckEvery time.Duration
	// OnReload, when set, hears of each change of the files: the new pair,
	// or why it was not loaded (the last good pair stays in service).
	OnReload func(cert *tls.Certificate, err error)

	mu      sync.Mutex
	cert    *tls.Certificate
	stats   [2]os.FileInfo // of certFile and keyFile when last looked at
	checked time.Time
}

// LoadKeyPair reads the pair once, so that a bad file fails at start with
// an error naming its key (certKey or keyKey).
func LoadKeyPair(certKey, certFile, keyKey, keyFile string) (*KeyPair, error) {
	p := &KeyPair{certKey: certKey, certFile: certFile, keyKey: keyKey, keyFile: keyFile,
		Clock: clock.Real(), CheckEvery: time.Second}
	stats, err := p.stat()
	if err != nil {
		return nil, err
	}
	if p.cert, err = p.read(); err != nil {
		return nil, err
	}
	p.stats = stats // checked stays zero: the first handshake looks again
	return p, nil
}

// Certificate returns the current pair, reloading it if a file changed.
func (p *KeyPair) Certificate() (*tls.Certificate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.Clock.Now()
	if now.Sub(p.checked) < p.CheckEvery {
		return p.cert, nil
	}
	p.checked = now
	stats, err := p.stat()
	if err != nil {
		if p.stats[0] != nil && p.OnReload != nil {
			p.OnReload(nil, err)
		}
		p.stats = [2]os.FileInfo{}
		return p.cert, nil
	}
	if sameFile(stats[0], p.stats[0]) && sameFile(stats[1], p.stats[1]) {
		return p.cert, nil
	}
	// Read once per change: a broken pair is not read again on every
	// look, only after the files change again.
	p.stats = stats
	cert, err := p.read()
	if err == nil {
		p.cert = cert
	}
	if p.OnReload != nil {
		p.OnReload(cert, err)
	}
	return p.cert, nil
}

func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}

// CertificateFunc is p's GetCertificate, or nil for a nil p: a server
// without a certificate serves plain HTTP.
func (p *KeyPair) CertificateFunc() func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if p == nil {
		return nil
	}
	return p.GetCertificate
}

// GetCertificate is for tls.Config.GetCertificate (a server).
func (p *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return p.Certificate()
}

// GetClientCertificate is for tls.Config.GetClientCertificate (a client).
func (p *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return p.Certificate()
}

func (p *KeyPair) stat() ([2]os.FileInfo, error) {
	var out [2]os.FileInfo
	for i, f := range []struct{ key, path string }{{p.certKey, p.certFile}, {p.keyKey, p.keyFile}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			return out, errorf(f.key, "cannot read %s: %v", quote(f.path), pathErr(err))
		}
		out[i] = fi
	}
	return out, nil
}

func (p *KeyPair) read() (*tls.Certificate, error) {
	certPEM, err := readFile(p.certKey, p.certFile, MaxCertFileBytes)
	if err != nil {
		return nil, err
	}
	if !hasCertificate(certPEM) {
		return nil, errorf(p.certKey, "%s holds no PEM certificate", quote(p.certFile))
	}
	keyPEM, err := readFile(p.keyKey, p.keyFile, MaxSecretFileBytes)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, errorf(p.keyKey, "%s: %v", quote(p.keyFile), err)
	}
	return &cert, nil
}

// hasCertificate reports whether b holds a PEM certificate that parses.
func hasCertificate(b []byte) bool {
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			return false
		}
		if block.Type == "CERTIFICATE" {
			_, err := x509.ParseCertificate(block.Bytes)
			return err == nil
		}
	}
}
