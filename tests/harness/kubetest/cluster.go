package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/proctest"
	"github.com/electd/electd/tests/harness/wait"
)

// Timeouts.
const (
	// ReadyTimeout bounds the start of etcd plus the API server until
	// /readyz answers (about 15 s on an idle machine, more on a busy one).
	ReadyTimeout = 3 * time.Minute
	stopTimeout  = 15 * time.Second
)

// ServiceCIDR is the cluster's service IP range (no Service here gets
// traffic: there is no kube-proxy).
const ServiceCIDR = "10.96.0.0/16"

// Cluster is a running etcd and kube-apiserver on loopback ports: RBAC on,
// a static admin token (group system:masters), service-account tokens
// signed with a key pair made at start. There is no kubelet, scheduler or
// controller-manager: pods are API objects only and stay Pending; no
// namespace gets a default ServiceAccount unless a test creates it.
type Cluster struct {
	URL        string // https://127.0.0.1:<port>
	AdminToken string
	CAFile     string // PEM bundle that verifies URL's certificate
	Dir        string // keys, logs and etcd's data

	client    *http.Client
	etcd      *proctest.Process
	apiserver *proctest.Process
	ports     []*port
}

// Start starts a cluster for a test and stops it when the test ends. It
// skips under -short; otherwise anything missing (etcd, the API server's
// build) fails the test.
func Start(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("kubetest: starts etcd and kube-apiserver; skipped with -short")
	}
	c, err := New(t.TempDir(), testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kubetest: end of the API server's log (%s):\n%s", c.apiserver.Log, c.apiserver.Tail(3000))
		}
		c.Close()
	})
	return c
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// New builds the API server if needed (see APIServer), then starts etcd and
// the API server with their files in dir, and waits until /readyz answers.
// progress receives build and start messages (nil: discard).
func New(dir string, progress io.Writer) (*Cluster, error) {
	if progress == nil {
		progress = io.Discard
	}
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, errors.New("kubetest: no `etcd` in PATH: apt-get install -y etcd-server (scripts/install-deps.sh does)")
	}
	apiBin, err := APIServer(progress)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir}
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	var ps [3]*port
	for i := range ps {
		if ps[i], err = reservePort(); err != nil {
			return nil, err
		}
		c.ports = append(c.ports, ps[i])
	}
	etcdClient, etcdPeer, secure := ps[0], ps[1], ps[2]

	keys, err := makeKeys(dir)
	if err != nil {
		return nil, fmt.Errorf("kubetest: keys: %w", err)
	}
	c.CAFile = keys.caCert
	c.AdminToken = randomToken()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(c.AdminToken+`,admin,admin-uid,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	c.URL = "https://" + secure.addr()
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(keys.caCert)
	if err != nil || !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("kubetest: CA: %v", err)
	}
	c.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}

	start := time.Now()
	c.etcd, err = startProcess(filepath.Join(dir, "etcd.log"), etcdBin,
		"--name", "kubetest",
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", "http://"+etcdClient.addr(),
		"--advertise-client-urls", "http://"+etcdClient.addr(),
		"--listen-peer-urls", "http://"+etcdPeer.addr(),
		"--initial-advertise-peer-urls", "http://"+etcdPeer.addr(),
		"--initial-cluster", "kubetest=http://"+etcdPeer.addr(),
	)
	if err != nil {
		return nil, err
	}
	if err := c.waitEtcd("http://" + etcdClient.addr() + "/health"); err != nil {
		return nil, err
	}
	c.apiserver, err = startProcess(filepath.Join(dir, "apiserver.log"), apiBin,
		"--etcd-servers", "http://"+etcdClient.addr(),
		"--bind-address", "127.0.0.1",
		"--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(secure.n),
		"--tls-cert-file", keys.servingCert,
		"--tls-private-key-file", keys.servingKey,
		"--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", tokens,
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", keys.saPub,
		"--service-account-signing-key-file", keys.saKey,
		"--service-cluster-ip-range", ServiceCIDR,
		// Nothing here would serve the endpoints of the "kubernetes"
		// Service, and a loopback address is not a valid endpoint.
		"--endpoint-reconciler-type", "none",
		"--profiling=false",
	)
	if err != nil {
		return nil, err
	}
	if err := c.waitReady(); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "kubetest: kube-apiserver ready at %s after %v\n", c.URL, time.Since(start).Round(100*time.Millisecond))
	ok = true
	return c, nil
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (c *Cluster) waitEtcd(url string) error {
	err := wait.Until(context.Background(), 30*time.Second, 100*time.Millisecond, func() error {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(b), `"true"`) {
				return nil
			}
			err = fmt.Errorf("%d %s", resp.StatusCode, proctest.Tail(string(b), 200))
		}
		if c.etcd.Exited() {
			return wait.Stop(fmt.Errorf("exited (%v)", c.etcd.Err()))
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("kubetest: etcd did not become healthy (%w); its log %s ends:\n%s", err, c.etcd.Log, c.etcd.Tail(2000))
	}
	return nil
}

func (c *Cluster) waitReady() error {
	err := wait.Until(context.Background(), ReadyTimeout, 250*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		code, body, err := c.Do(ctx, c.AdminToken, http.MethodGet, "/readyz", "", nil)
		cancel()
		if err == nil && code == 200 {
			return nil
		}
		if c.apiserver.Exited() {
			return wait.Stop(errors.New("kube-apiserver exited"))
		}
		return fmt.Errorf("last /readyz: %d %v %s", code, err, proctest.Tail(string(body), 500))
	})
	if err != nil {
		return fmt.Errorf("kubetest: kube-apiserver not ready: %w; its log %s ends:\n%s", err, c.apiserver.Log, c.apiserver.Tail(3000))
	}
	return nil
}

// Close stops the API server, then etcd, and releases the ports.
func (c *Cluster) Close() {
	for _, p := range []*proctest.Process{c.apiserver, c.etcd} {
		if p != nil {
			p.Stop(stopTimeout)
		}
	}
	for _, p := range c.ports {
		p.release()
	}
	c.ports = nil
}

// startProcess starts bin with args, its output in logPath.
func startProcess(logPath, bin string, args ...string) (*proctest.Process, error) {
	p, err := proctest.RunLogged(logPath, exec.Command(bin, args...))
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	return p, nil
}
