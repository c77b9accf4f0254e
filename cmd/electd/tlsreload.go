package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
)

// certCheckEvery bounds how often a handshake looks at the files: a
// rotation is served within about a second, and a flood of handshakes
// costs one stat per second, not one per handshake.
const certCheckEvery = time.Second

// certReloader serves the certificate of http.tls_cert_file and
// http.tls_key_file and re-reads them when they change. A mounted
// Kubernetes Secret rotates by swapping a "..data" symlink, so the files'
// identity (device, inode, size, mtime, through the symlinks) is what is
// compared; a pair that fails to load keeps the last good one in service
// and is logged once, until the files change again.
type certReloader struct {
	certFile, keyFile string
	now               func() time.Time
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	seen    [2]fileID // of the files last loaded, or last tried
	checked time.Time
}

// fileID identifies one version of a file.
type fileID struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	id := fileID{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), st.Ino
	}
	return id, nil
}

// newCertReloader loads the pair once; an error names the key to fix.
func newCertReloader(certFile, keyFile string, now func() time.Time, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, now: now, log: log}
	ids, err := r.stat()
	if err != nil {
		return nil, err
	}
	cert, err := loadPair(certFile, keyFile)
	if err != nil {
		return nil, errorf("http.tls_cert_file", "%v", err)
	}
	r.cert, r.seen, r.checked = cert, ids, now()
	return r, nil
}

func (r *certReloader) stat() ([2]fileID, error) {
	var ids [2]fileID
	var err error
	if ids[0], err = statID(r.certFile); err != nil {
		return ids, errorf("http.tls_cert_file", "%v", err)
	}
	if ids[1], err = statID(r.keyFile); err != nil {
		return ids, errorf("http.tls_key_file", "%v", err)
	}
	return ids, nil
}

// loadPair reads a PEM certificate chain and its key.
func loadPair(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("cannot load the TLS certificate and key: %w", err)
	}
	return &cert, nil
}

// getCertificate is tls.Config.GetCertificate.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= certCheckEvery {
		r.checked = now
		r.reloadLocked()
	}
	return r.cert, nil
}

// reloadLocked loads the files if they changed since last seen.
func (r *certReloader) reloadLocked() {
	ids, err := r.stat()
	if err != nil {
		if ids != r.seen {
			r.seen = ids
			r.log.Warn("cannot read the TLS files; serving the last good certificate", "err", err)
		}
		return
	}
	if ids == r.seen {
		return
	}
	r.seen = ids
	cert, err := loadPair(r.certFile, r.keyFile)
	if err != nil {
		r.log.Warn("TLS files changed but do not load; serving the last good certificate", "err", err)
		return
	}
	r.cert = cert
	r.log.Info("TLS certificate reloaded", certAttrs(cert)...)
}

// certAttrs describe a certificate for the log.
func certAttrs(c *tls.Certificate) []any {
	leaf := c.Leaf
	if leaf == nil && len(c.Certificate) > 0 {
		leaf, _ = x509.ParseCertificate(c.Certificate[0])
	}
	if leaf == nil {
		return nil
	}
	return []any{"subject", leaf.Subject.String(), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339)}
}
