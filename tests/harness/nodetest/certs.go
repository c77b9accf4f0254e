package nodetest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"time"

	"github.com/electd/electd/internal/testkit/testcert"
)

// pki are the key files of one node, made fresh for every run.
type pki struct {
	caCert, caKey     string // the cluster CA: verifies the API server, the kubelet trusts it for clients
	apiCert, apiKey   string // the API server's serving certificate
	kubeletClientCert string // the API server's client certificate towards the kubelet (logs, exec)
	kubeletClientKey  string
	saKey, saPub      string // service-account token signing
}

// makePKI writes a CA (tests/testcert), the API server's serving
// certificate (valid for the node's address, the "kubernetes" Service's
// address, which pods use, and its DNS names), the API server's kubelet
// client certificate (group system:masters, so the kubelet's webhook
// authorizer allows logs and exec) and the service-account key pair.
func makePKI(dir string) (pki, error) {
	p := pki{
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		apiCert: filepath.Join(dir, "apiserver.crt"), apiKey: filepath.Join(dir, "apiserver.key"),
		kubeletClientCert: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		kubeletClientKey:  filepath.Join(dir, "apiserver-kubelet-client.key"),
		saKey:             filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
	}
	ca, err := testcert.New("electd e2e CA", 48*time.Hour)
	if err != nil {
		return p, err
	}
	caKey, err := ca.KeyPEM()
	if err != nil {
		return p, err
	}
	api, err := ca.Sign(testcert.Spec{CN: "kube-apiserver", Server: true, Names: []string{
		NodeIP, apiService, "127.0.0.1",
		"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}})
	if err != nil {
		return p, err
	}
	client, err := ca.Sign(testcert.Spec{CN: "kube-apiserver-kubelet-client", Org: []string{"system:masters"}, Client: true})
	if err != nil {
		return p, err
	}
	saKey, saPub, err := testcert.SigningKey()
	if err != nil {
		return p, err
	}
	for path, pem := range map[string][]byte{p.caCert: ca.CertPEM, p.caKey: caKey, p.apiCert: api.CertPEM, p.apiKey: api.KeyPEM,
		p.kubeletClientCert: client.CertPEM, p.kubeletClientKey: client.KeyPEM, p.saKey: saKey, p.saPub: saPub} {
		if err := testcert.WriteFile(path, pem); err != nil {
			return p, fmt.Errorf("nodetest: %w", err)
		}
	}
	return p, nil
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
