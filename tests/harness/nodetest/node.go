package nodetest

import (
	"crypto/tls"
	"crypto/x509"
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

	"github.com/electd/electd/tests/harness/kubetest"
	"github.com/electd/electd/tests/harness/zktest"
)

// Timeouts of a node's start and stop. They bound waits on conditions; a
// busy machine takes longer but never needs more.
const (
	readyTimeout = 4 * time.Minute
	stopTimeout  = 20 * time.Second
)

// Node is a single-node Kubernetes cluster in a network namespace of its
// own: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// kubelet and kube-proxy (iptables mode) of the release kubetest builds,
// Debian's containerd, runc and CNI plugins, the images the tests use
// (imported, no registry), and the cluster's DNS (dns.go). Every address
// lives inside the namespace.
type Node struct {
	Netns      *Netns
	Bins       *kubetest.Binaries
	Kubeconfig string // the admin's, for kubectl
	CAFile     string
	Logs       string // one log file per component

	adminToken string
	api        *http.Client
	lay        layout
	dns        *clusterDNS
	sp         spawner
	procs      []*process // in start order
	unlock     func()
	progress   io.Writer
}

// Start starts a node for a test and tears it down when the test ends,
// printing the tails of the components' logs first if the test failed. A
// missing part fails the test with what to install: it is never a skip.
func Start(t testing.TB) *Node {
	t.Helper()
	n, err := New(testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(n.LogTails(2500))
		}
		if err := n.Close(); err != nil {
			t.Errorf("nodetest: teardown: %v", err)
		}
	})
	return n
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// Require checks what a node needs from the machine and returns an error
// naming the Debian packages to install.
func Require() error {
	if os.Geteuid() != 0 {
		return errors.New("nodetest: a node needs root (network namespaces, mounts, cgroups)")
	}
	var missing []string
	for _, c := range []struct{ file, pkg string }{
		{"ip", "iproute2"}, {"nsenter", "util-linux"}, {"etcd", "etcd-server"},
		{"containerd", "containerd"}, {"containerd-shim-runc-v2", "containerd"}, {"ctr", "containerd"},
		{"runc", "runc"}, {"iptables", "iptables"}, {"conntrack", "conntrack"},
	} {
		if _, err := exec.LookPath(c.file); err != nil {
			missing = append(missing, c.pkg+" ("+c.file+")")
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil {
			missing = append(missing, "containernetworking-plugins ("+filepath.Join(cniBinDir, p)+")")
		}
	}
	if _, err := zktest.Classpath(); err != nil {
		missing = append(missing, err.Error())
	}
	if len(missing) > 0 {
		return fmt.Errorf("nodetest: missing: %s; scripts/install-deps.sh (make deps) installs them", strings.Join(missing, ", "))
	}
	return nil
}

// New builds what is missing (the Kubernetes binaries once per machine, the
// images every run), takes the machine's node lock, removes what a killed
// earlier run left, and starts the node. progress gets what it does.
func New(progress io.Writer) (*Node, error) {
	return newNode(progress, nil)
}

// newNode is New; afterLock, if not nil, runs once the machine's lock is
// held and an earlier run's leftovers are gone, before anything starts
// (nodetest's own tests read the machine's state there).
func newNode(progress io.Writer, afterLock func()) (_ *Node, err error) {
	if progress == nil {
		progress = io.Discard
	}
	if err := Require(); err != nil {
		return nil, err
	}
	bins, err := kubetest.Build(progress)
	if err != nil {
		return nil, err
	}
	moduleDir, err := ModuleDir()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "nodetest-images-")
	if err != nil {
		return nil, fmt.Errorf("nodetest: %w", err)
	}
	defer os.RemoveAll(work)
	start := time.Now()
	images, err := buildImages(moduleDir, work, bins.LeaseSidecar)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "nodetest: images built in %v\n", time.Since(start).Round(100*time.Millisecond))

	unlock, err := lockMachine(progress)
	if err != nil {
		return nil, err
	}
	n := &Node{Bins: bins, unlock: unlock, progress: progress, lay: newLayout()}
	defer func() {
		if err != nil {
			err = errors.Join(err, fmt.Errorf("%s", n.LogTails(2000)), n.Close())
		}
	}()
	if err := teardown(); err != nil {
		return nil, fmt.Errorf("nodetest: removing what an earlier run left: %w", err)
	}
	if afterLock != nil {
		afterLock()
	}
	if _, err := recordBefore(); err != nil {
		return nil, err
	}
	if err := weighPods(); err != nil {
		return nil, err
	}
	if err := n.prepare(); err != nil {
		return nil, err
	}
	if n.Netns, err = newNetns(NetnsPrefix + fmt.Sprint(os.Getpid())); err != nil {
		return nil, err
	}
	n.api = n.client(30 * time.Second)
	start = time.Now()
	if err := n.startAll(images); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "nodetest: node %s Ready in %v\n", NodeName, time.Since(start).Round(100*time.Millisecond))
	return n, nil
}

// prepare writes keys, tokens, kubeconfigs and configurations.
func (n *Node) prepare() error {
	l := n.lay
	if err := l.mkdirs(); err != nil {
		return err
	}
	n.Logs = l.logs
	p, err := makePKI(l.pki)
	if err != nil {
		return fmt.Errorf("nodetest: keys: %w", err)
	}
	n.CAFile = p.caCert
	ids := identities()
	if err := writeTokens(l.tokens, ids); err != nil {
		return err
	}
	for _, id := range ids {
		if err := writeKubeconfig(filepath.Join(l.pki, id.name+".kubeconfig"), p.caCert, id.token); err != nil {
			return err
		}
		if id.name == "admin" {
			n.adminToken = id.token
		}
	}
	n.Kubeconfig = filepath.Join(l.pki, "admin.kubeconfig")
	files := map[string]string{
		l.containerdConfig:                          l.containerdTOML(),
		filepath.Join(l.cniConf, "10-e2e.conflist"): l.cniConflist(),
		l.kubeletConfig:                             l.kubeletYAML(p.caCert),
		l.proxyConfig:                               l.proxyYAML(filepath.Join(l.pki, "kube-proxy.kubeconfig")),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return fmt.Errorf("nodetest: %w", err)
		}
	}
	return nil
}

// client is an HTTP client whose connections start inside the namespace,
// trusting the cluster's CA. No keep-alive: each request is a new
// connection, as a new client of a Service would make.
func (n *Node) client(timeout time.Duration) *http.Client {
	pool := x509.NewCertPool()
	if ca, err := os.ReadFile(n.CAFile); err == nil {
		pool.AppendCertsFromPEM(ca)
	}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		Proxy:             nil,
		DialContext:       n.Netns.DialContext,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
}

// HTTPClient returns a client for requests from inside the namespace (to
// ClusterIPs, pod addresses), without keep-alive.
func (n *Node) HTTPClient(timeout time.Duration) *http.Client { return n.client(timeout) }

// start starts one component inside the namespace.
func (n *Node) start(name, bin string, args ...string) (*process, error) {
	p, err := n.sp.startProcess(name, filepath.Join(n.lay.logs, name+".log"), n.Netns.Command(bin, args...))
	if err != nil {
		return nil, err
	}
	n.procs = append(n.procs, p)
	return p, nil
}

// LogTails returns the end of each component's log.
func (n *Node) LogTails(each int) string {
	var b strings.Builder
	for _, p := range n.procs {
		fmt.Fprintf(&b, "--- %s (%s):\n%s\n", p.name, p.log, p.tail(each))
	}
	return b.String()
}

// Close stops the node and removes everything it made: it stops the
// control plane, kills the containers and their shims, unmounts, removes
// the cgroups, directories and namespaces, restores the kubelet's sysctls,
// and releases the machine's lock.
func (n *Node) Close() error {
	if n.unlock == nil {
		return nil
	}
	// The node agents first, so nothing restarts a container while the
	// containers are killed; the API server and etcd last.
	order := []string{"kube-proxy", "kubelet", "kube-scheduler", "kube-controller-manager"}
	byName := map[string]*process{}
	for _, p := range n.procs {
		byName[p.name] = p
	}
	for _, name := range order {
		byName[name].stop(stopTimeout)
	}
	killContainers()
	n.dns.close()
	for i := len(n.procs) - 1; i >= 0; i-- {
		n.procs[i].stop(stopTimeout)
	}
	err := teardown()
	n.unlock()
	n.unlock = nil
	return err
}
