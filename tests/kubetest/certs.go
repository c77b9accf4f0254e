package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
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
// localhost, and a service-account signing key pair into dir. ECDSA P-256:
// quick to generate, and kube-apiserver signs tokens with it (ES256).
func makeKeys(dir string) (keyFiles, error) {
	k := keyFiles{
		caCert:      filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saKey:       filepath.Join(dir, "sa.key"),
		saPub:       filepath.Join(dir, "sa.pub"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return k, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "electd kubetest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return k, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return k, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return k, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost", "kubernetes.default.svc"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return k, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return k, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return k, err
	}
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{
		{k.caCert, "CERTIFICATE", caDER},
		{k.servingCert, "CERTIFICATE", srvDER},
		{k.saPub, "PUBLIC KEY", saPub},
	} {
		if err := writePEM(f.path, f.typ, f.der); err != nil {
			return k, err
		}
	}
	for path, key := range map[string]*ecdsa.PrivateKey{k.servingKey: srvKey, k.saKey: saKey} {
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return k, err
		}
		if err := writePEM(path, "EC PRIVATE KEY", der); err != nil {
			return k, err
		}
	}
	return k, nil
}

func writePEM(path, typ string, der []byte) error {
	b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	return nil
}
