// Package testcert makes certificates at test time: a CA, the server or
// client certificates it signs, and signing key pairs, as PEM. Tests use
// it for TLS to ZooKeeper and for the HTTP API, and the Kubernetes
// harnesses (tests/harness/kubetest, tests/harness/nodetest) for their API servers and
// service-account tokens; nothing here is for production.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for one test or cluster.
type CA struct {
	Cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	CertPEM  []byte
	validity time.Duration
}

// New makes a CA named name whose certificates, its own included, are
// valid from an hour ago for validity.
func New(name string, validity time.Duration) (*CA, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl, err := template(pkix.Name{CommonName: name}, validity)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, CertPEM: pemBlock("CERTIFICATE", der), validity: validity}, nil
}

// NewCA makes a CA valid for a day, failing t.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := New(name, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// KeyPEM is the CA's private key (PKCS #8), for a harness whose API
// server signs with it.
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

// Pool is a cert pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Leaf is a certificate the CA signed, with its key (PKCS #8).
type Leaf struct {
	CertPEM, KeyPEM []byte
}

// Spec says what a certificate is for.
type Spec struct {
	CN     string
	Org    []string
	Server bool     // extended key usage server auth
	Client bool     // and client auth
	Names  []string // DNS names or IP addresses
}

// Sign signs a certificate as s says.
func (ca *CA) Sign(s Spec) (Leaf, error) {
	key, err := newKey()
	if err != nil {
		return Leaf{}, err
	}
	tmpl, err := template(pkix.Name{CommonName: s.CN, Organization: s.Org}, ca.validity)
	if err != nil {
		return Leaf{}, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if s.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if s.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	for _, n := range s.Names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return Leaf{}, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Leaf{}, err
	}
	return Leaf{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", kder)}, nil
}

// Issue signs a certificate for names (DNS names or IP addresses), usable
// by servers and clients, failing t.
func (ca *CA) Issue(t testing.TB, cn string, names ...string) Leaf {
	t.Helper()
	l, err := ca.Sign(Spec{CN: cn, Server: true, Client: true, Names: names})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TLSCertificate is the leaf as a tls.Certificate.
func (l Leaf) TLSCertificate(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// SigningKey makes a key pair that signs rather than serves (an API
// server's service-account tokens): the private key (PKCS #8) and the
// public key (PKIX), as PEM.
func SigningKey() (private, public []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("PRIVATE KEY", der), pemBlock("PUBLIC KEY", pub), nil
}

// WriteFile writes data, concatenated, to path (mode 0600).
func WriteFile(path string, data ...[]byte) error {
	var all []byte
	for _, d := range data {
		all = append(all, d...)
	}
	return os.WriteFile(path, all, 0o600)
}

// Write writes data to dir/name (mode 0600) and returns the path, failing
// t.
func Write(t testing.TB, dir, name string, data ...[]byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := WriteFile(p, data...); err != nil {
		t.Fatal(err)
	}
	return p
}

// newKey is an ECDSA P-256 key: quick to make, and what kube-apiserver
// signs tokens with (ES256).
func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

// template is a certificate of subject valid from an hour ago for validity,
// with a random serial number.
func template(subject pkix.Name, validity time.Duration) (*x509.Certificate, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &x509.Certificate{SerialNumber: n, Subject: subject, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity)}, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
