package nodetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/electd/electd/tests/harness/kubetest"
	"github.com/electd/electd/tests/harness/wait"
)

// startAll starts the components in dependency order and waits until the
// node is Ready and the default namespace's ServiceAccount exists.
func (n *Node) startAll(images []string) error {
	l := n.lay
	kc := func(name string) string { return filepath.Join(l.pki, name+".kubeconfig") }
	etcd, err := n.start("etcd", "etcd",
		"--name", NodeName, "--data-dir", l.etcd,
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", NodeName+"=http://127.0.0.1:2380")
	if err != nil {
		return err
	}
	if err := n.startDNS(); err != nil {
		return err
	}
	containerd, err := n.start("containerd", "containerd", "--config", l.containerdConfig)
	if err != nil {
		return err
	}
	if err := waitFor("etcd healthy", etcd, func() error {
		return n.get("http://127.0.0.1:2379/health", `"true"`)
	}); err != nil {
		return err
	}
	p := func(f string) string { return filepath.Join(l.pki, f) }
	api, err := n.start("kube-apiserver", n.Bins.APIServer,
		"--etcd-servers", "http://127.0.0.1:2379",
		"--bind-address", NodeIP, "--advertise-address", NodeIP, "--secure-port", fmt.Sprint(APIPort),
		"--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"),
		"--cert-dir", p("apiserver-generated"),
		"--token-auth-file", l.tokens,
		"--authorization-mode", "Node,RBAC",
		"--kubelet-client-certificate", p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key", p("apiserver-kubelet-client.key"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", p("sa.pub"), "--service-account-signing-key-file", p("sa.key"),
		"--service-cluster-ip-range", ServiceCIDR,
		// The kubelet by its address: its name would be looked up in the
		// machine's DNS, outside the namespace.
		"--kubelet-preferred-address-types", "InternalIP",
		"--profiling=false")
	if err != nil {
		return err
	}
	if err := waitFor("containerd's socket", containerd, func() error {
		c, err := net.Dial("unix", l.containerdSock)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		return err
	}
	for _, im := range images {
		if out, err := exec.Command("ctr", "--address", l.containerdSock, "-n", "k8s.io", "images", "import", im).CombinedOutput(); err != nil {
			return fmt.Errorf("nodetest: ctr images import %s: %v: %s", im, err, out)
		}
	}
	if err := waitFor("kube-apiserver /readyz", api, func() error {
		code, body, err := n.Do(context.Background(), http.MethodGet, "/readyz", nil)
		if err == nil && code != 200 {
			err = fmt.Errorf("%d %s", code, tail(string(body), 300))
		}
		return err
	}); err != nil {
		return err
	}
	if _, err := n.start("kube-controller-manager", n.Bins.ControllerManager,
		"--kubeconfig", kc("controller-manager"), "--authentication-kubeconfig", kc("controller-manager"),
		"--authorization-kubeconfig", kc("controller-manager"),
		"--root-ca-file", p("ca.crt"), "--service-account-private-key-file", p("sa.key"),
		"--use-service-account-credentials", "--leader-elect=false",
		"--bind-address", "127.0.0.1", "--secure-port", "0"); err != nil {
		return err
	}
	if _, err := n.start("kube-scheduler", n.Bins.Scheduler,
		"--kubeconfig", kc("scheduler"), "--authentication-kubeconfig", kc("scheduler"),
		"--authorization-kubeconfig", kc("scheduler"),
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0"); err != nil {
		return err
	}
	kubelet, err := n.start("kubelet", n.Bins.Kubelet,
		"--config", l.kubeletConfig, "--kubeconfig", kc("kubelet"),
		"--root-dir", l.kubeletRoot, "--cert-dir", l.kubeletCerts,
		"--node-ip", NodeIP, "--hostname-override", NodeName, "--v", "2")
	if err != nil {
		return err
	}
	if _, err := n.start("kube-proxy", n.Bins.Proxy, "--config", l.proxyConfig, "--v", "2"); err != nil {
		return err
	}
	if err := waitFor("node Ready", kubelet, func() error {
		var node struct {
			Status struct {
				Conditions []struct{ Type, Status, Message string }
			}
		}
		if err := n.Get("/api/v1/nodes/"+NodeName, &node); err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				return nil
			}
			if c.Type == "Ready" {
				return fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
			}
		}
		return fmt.Errorf("no Ready condition yet")
	}); err != nil {
		return err
	}
	// The ServiceAccount admission plugin refuses pods of a namespace until
	// the controller-manager has made its default ServiceAccount.
	if err := waitFor("the default ServiceAccount", kubelet, func() error {
		var sa struct{}
		return n.Get("/api/v1/namespaces/default/serviceaccounts/default", &sa)
	}); err != nil {
		return err
	}
	for _, proc := range n.procs {
		if proc.exited() {
			return fmt.Errorf("nodetest: %s exited; its log ends:\n%s", proc.name, proc.tail(3000))
		}
	}
	return nil
}

// waitFor polls check (tests/harness/wait) until it passes, the process exits, or
// readyTimeout.
func waitFor(what string, p *process, check func() error) error {
	exited := false
	err := wait.Until(context.Background(), readyTimeout, 200*time.Millisecond, func() error {
		err := check()
		if err != nil && p.exited() {
			exited = true
			return wait.Stop(fmt.Errorf("nodetest: %s exited before %s; its log %s ends:\n%s", p.name, what, p.log, p.tail(3000)))
		}
		return err
	})
	if err == nil || exited {
		return err
	}
	return fmt.Errorf("nodetest: no %s (%w); %s's log ends:\n%s", what, err, p.name, p.tail(3000))
}

// get fetches url from inside the namespace and wants want in the body.
func (n *Node) get(url, want string) error {
	resp, err := n.api.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
		return fmt.Errorf("%d %s", resp.StatusCode, tail(string(b), 200))
	}
	return nil
}

// Do sends one request to the API server as the admin.
func (n *Node) Do(ctx context.Context, method, path string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, fmt.Sprintf("https://%s:%d%s", NodeIP, APIPort, path), body)
	if err != nil {
		return 0, nil, err
	}
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	return kubetest.Send(n.api, req, n.adminToken, contentType, 64<<20)
}

// Get decodes a 200 answer of the API server into out.
func (n *Node) Get(path string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return n.getCtx(ctx, path, out)
}

func (n *Node) getCtx(ctx context.Context, path string, out any) error {
	code, b, err := n.Do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if code != 200 {
		return fmt.Errorf("GET %s: %d %s", path, code, tail(string(b), 400))
	}
	return json.Unmarshal(b, out)
}

// Stream opens a GET on path as the admin and returns the body as it
// comes (a watch, a followed log), until ctx ends.
func (n *Node) Stream(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s:%d%s", NodeIP, APIPort, path), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+n.adminToken)
	c := *n.api
	c.Timeout = 0 // a stream lasts as long as ctx
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, tail(string(b), 300))
	}
	return resp.Body, nil
}

// Watch streams the events of a watch on path (a collection, with
// ?watch=1 added) to fn until ctx ends or fn returns false. Each event's
// object is handed over undecoded.
func (n *Node) Watch(ctx context.Context, path string, fn func(typ string, obj json.RawMessage) bool) error {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	body, err := n.Stream(ctx, path+sep+"watch=1")
	if err != nil {
		return err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return err
		}
		if !fn(ev.Type, ev.Object) {
			return nil
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}

// Kubectl runs kubectl of the cluster's release as the admin, inside the
// namespace, and returns its standard output; an error holds its standard
// error.
func (n *Node) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := n.Netns.CommandContext(ctx, n.Bins.Kubectl, append([]string{"--kubeconfig", n.Kubeconfig}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
