package nodetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Addresses inside the node's network namespace. They exist nowhere else:
// the namespace has no link to the machine's own network, so nothing sent
// to them can leave it. 198.18.0.0/15 is reserved for benchmarking
// (RFC 2544) and used by no real network.
const (
	NodeIP      = "198.19.0.1"      // the node (kubelet, API server, the cluster's DNS, kubectl's target)
	nodeCIDR    = "198.19.0.1/24"   // on veth0 inside the namespace
	PodCIDR     = "198.18.0.0/24"   // the bridge plugin's range (host-local)
	podGateway  = "198.18.0.1"      // the bridge's address
	ServiceCIDR = "198.19.128.0/24" // ClusterIPs; kube-proxy's DNAT makes them reachable
	apiService  = "198.19.128.1"    // the "kubernetes" Service, first address of the range
	APIPort     = 6443
	DNSPort     = 53
)

// NetnsPrefix starts the name of every network namespace a run creates, so
// that a later run finds and deletes one a killed run left behind.
const NetnsPrefix = "electd-e2e-"

// Netns is a network namespace made for one node: lo up, a veth pair
// inside it with the node's address, a default route on that veth (so that
// connections to ClusterIPs are routed: kube-proxy's DNAT happens on the
// way out), forwarding and bridge netfilter on.
type Netns struct {
	Name string
	Path string // /run/netns/<Name>, what nsenter --net= takes
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nodetest: %s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newNetns creates the namespace. On error it removes what it made.
func newNetns(name string) (_ *Netns, err error) {
	if err := run("ip", "netns", "add", name); err != nil {
		return nil, err
	}
	n := &Netns{Name: name, Path: filepath.Join("/run/netns", name)}
	defer func() {
		if err != nil {
			n.Delete()
		}
	}()
	in := func(args ...string) error { return run("ip", append([]string{"-n", name}, args...)...) }
	steps := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "veth0", "type", "veth", "peer", "name", "veth1"},
		{"addr", "add", nodeCIDR, "dev", "veth0"},
		{"link", "set", "veth0", "up"},
		{"link", "set", "veth1", "up"},
		{"route", "add", "default", "dev", "veth0"},
	}
	for _, s := range steps {
		if err := in(s...); err != nil {
			return nil, err
		}
	}
	// Sysctls under /proc/sys/net are those of the opener's namespace.
	for _, kv := range []string{"net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1"} {
		if err := run("nsenter", "--net="+n.Path, "sysctl", "-qw", kv); err != nil {
			return nil, fmt.Errorf("%w (bridge netfilter needs br_netfilter in the kernel)", err)
		}
	}
	return n, nil
}

// Delete removes the namespace; the veth pair goes with it.
func (n *Netns) Delete() error {
	return run("ip", "netns", "delete", n.Name)
}

// Command returns a command that runs name inside the namespace, through
// nsenter --net: only the network namespace changes. Not `ip netns exec`,
// which also makes a private mount namespace and remounts /sys, hiding the
// cgroup mounts and the kubelet's volume mounts from containerd.
func (n *Netns) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + n.Path, "--", name}, args...)...)
}

// CommandContext is Command, killed when ctx ends.
func (n *Netns) CommandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.Path, "--", name}, args...)...)
}

// DialContext opens a connection from inside the namespace (see inside).
// The test process itself stays outside.
func (n *Netns) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.inside(func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// ListenPacket opens a packet socket inside the namespace (see inside).
func (n *Netns) ListenPacket(network, addr string) (net.PacketConn, error) {
	var c net.PacketConn
	err := n.inside(func() (err error) {
		c, err = net.ListenPacket(network, addr)
		return err
	})
	return c, err
}

// inside runs fn on an OS thread switched into the namespace: a socket fn
// creates keeps the namespace after the thread switches back.
func (n *Netns) inside(fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// A thread whose namespace could not be restored is never unlocked:
		// it ends with this goroutine instead of serving other code.
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer self.Close()
		target, err := os.Open(n.Path)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("nodetest: setns %s: %w", n.Path, err)
			return
		}
		err = fn()
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

// leftoverNetns lists namespaces of earlier runs.
func leftoverNetns() []string {
	ents, _ := os.ReadDir("/run/netns")
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), NetnsPrefix) {
			names = append(names, e.Name())
		}
	}
	return names
}
