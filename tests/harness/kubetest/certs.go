package kubetest

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/electd/electd/internal/testkit/testcert"
)

// keyFiles are the files a cluster's API server needs, made at start.
type keyFiles struct {
	caCert      string // CA that signed the serving certificate (clients trust it)
	servingCert string
	servingKey  string
	saKey       string // signs service-account tokens
	saPub       string // verifies them
}

// makeKeys writes a fresh CA, a serving certificate for 127.0.0.1 and
// localhost, and a service-account signing key pair into dir
// (tests/testcert).
func makeKeys(dir string) (keyFiles, error) {
	k := keyFiles{
		caCert:      filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saKey:       filepath.Join(dir, "sa.key"),
		saPub:       filepath.Join(dir, "sa.pub"),
	}
	ca, err := testcert.New("electd kubetest CA", 24*time.Hour)
	if err != nil {
		return k, fmt.Errorf("kubetest: %w", err)
	}
	srv, err := ca.Sign(testcert.Spec{CN: "kube-apiserver", Server: true,
		Names: []string{"127.0.0.1", "localhost", "kubernetes.default.svc"}})
	if err != nil {
		return k, fmt.Errorf("kubetest: %w", err)
	}
	saKey, saPub, err := testcert.SigningKey()
	if err != nil {
		return k, fmt.Errorf("kubetest: %w", err)
	}
	for path, pem := range map[string][]byte{k.caCert: ca.CertPEM, k.servingCert: srv.CertPEM,
		k.servingKey: srv.KeyPEM, k.saKey: saKey, k.saPub: saPub} {
		if err := testcert.WriteFile(path, pem); err != nil {
			return k, fmt.Errorf("kubetest: %w", err)
		}
	}
	return k, nil
}
