//go:build e2e

package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/electd/electd/deploy/k8s"
	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/harness/wait"
)

// testPolicies checks the flavour's NetworkPolicies, as applied, against
// the ports its pods really listen on (the kernel's socket table of each
// pod's network namespace), since no network plugin on this machine
// enforces them (docs/kubernetes.md, "NetworkPolicies"): every port that
// must be reached from another pod is admitted to exactly who needs it
// (the Service's target port from anywhere; the port the leader's proxy
// takes its peers' forwards on from the app's other pods; ZooKeeper's
// client port from the app's pods, its quorum ports from its peers), and
// every other listening port to no pod at all. A port added to a flavour
// without a matching rule fails here, where an enforcing plugin would
// drop its traffic.
func testPolicies(t *testing.T, ctx context.Context, d *Deployment, leader string, rep *Report) {
	var list networkingv1.NetworkPolicyList
	if err := d.N.Get("/apis/networking.k8s.io/v1/namespaces/"+d.F.Namespace+"/networkpolicies", &list); err != nil {
		t.Fatal(err)
	}
	var pols []*networkingv1.NetworkPolicy
	for i := range list.Items {
		pols = append(pols, &list.Items[i])
	}
	ns := labels.Set{"kubernetes.io/metadata.name": d.F.Namespace}
	app, err := d.Pod(leader)
	if err != nil {
		t.Fatal(err)
	}
	// The election settles on a quorum, two servers of three: the third
	// may still be starting, with no container to read the sockets of.
	if err := wait.Until(ctx, 3*time.Minute, pollEvery, func() error { return zkReady(d, len(zooKeeperClaims)) }); err != nil {
		logZooKeeper(t, d, 60)
		t.Fatal(err)
	}
	zks, err := d.zkPods()
	if err != nil {
		t.Fatal(err)
	}
	if len(zks) == 0 {
		t.Fatal("no ZooKeeper pod: the flavour runs without the shipped ensemble")
	}
	sources := map[string]k8s.Source{
		"the node":                   {Node: true},
		"another app pod":            {Namespace: ns, Pod: labels.Set(app.Labels)},
		"a ZooKeeper server":         {Namespace: ns, Pod: labels.Set(zks[0].Labels)},
		"another pod":                {Namespace: ns, Pod: labels.Set{"run": "client"}},
		"a pod elsewhere":            {Namespace: labels.Set{"kubernetes.io/metadata.name": "elsewhere"}, Pod: labels.Set{"run": "client"}},
		"a look-alike pod elsewhere": {Namespace: labels.Set{"kubernetes.io/metadata.name": "elsewhere"}, Pod: labels.Set(app.Labels)},
	}
	all := []string{"the node", "another app pod", "a ZooKeeper server", "another pod", "a pod elsewhere", "a look-alike pod elsewhere"}
	// Who must get in, by port; any other listening port: the node alone.
	appNeeds := map[int32][]string{}
	svcPort, err := d.serviceTargetPort(app)
	if err != nil {
		t.Fatal(err)
	}
	appNeeds[svcPort] = all
	if peer := d.leaderProxyPort(ctx, app); peer > 0 && peer != svcPort {
		appNeeds[peer] = []string{"the node", "another app pod"}
	}
	zkNeeds := map[int32][]string{
		2181: {"the node", "another app pod"},
		2888: {"the node", "a ZooKeeper server"},
		3888: {"the node", "a ZooKeeper server"},
	}
	var lines []string
	check := func(p corev1.Pod, container string, needs map[int32][]string) {
		ports, err := d.listening(p, container)
		if err != nil {
			t.Fatal(err)
		}
		dst := k8s.Destination{Namespace: ns, Pod: labels.Set(p.Labels), Spec: &p.Spec}
		for _, port := range ports {
			want := needs[port]
			if want == nil {
				want = []string{"the node"}
			}
			var in []string
			for _, from := range all {
				ok, err := k8s.Admits(pols, sources[from], dst, port)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					in = append(in, from)
				}
				if ok != slices.Contains(want, from) {
					t.Errorf("%s:%d (listening in %s): %s admitted = %v, want %v", p.Name, port, container, from, ok, !ok)
				}
			}
			lines = append(lines, fmt.Sprintf("%s:%d: %s", p.Name, port, strings.Join(in, ", ")))
		}
		for port := range needs {
			if !slices.Contains(ports, port) && port != 2888 { // 2888: the ensemble's leader alone listens
				t.Errorf("%s: nothing listens on %d, which the flavour needs reached", p.Name, port)
			}
		}
	}
	check(app, "electd", appNeeds)
	for _, z := range zks {
		check(z, "zookeeper", zkNeeds)
	}
	rep.Add(d.F.Name, "NetworkPolicies as applied, against every port the pods listen on (not loopback), who they admit:\n```text\n"+strings.Join(lines, "\n")+"\n```")
}

// serviceTargetPort is the container port the app Service sends to.
func (d *Deployment) serviceTargetPort(p corev1.Pod) (int32, error) {
	var svc corev1.Service
	if err := d.N.Get("/api/v1/namespaces/"+d.F.Namespace+"/services/app", &svc); err != nil {
		return 0, err
	}
	tp := svc.Spec.Ports[0].TargetPort
	if tp.Type == intstr.Int {
		return tp.IntVal, nil
	}
	if n := k8s.NamedPort(&p.Spec, tp.StrVal); n > 0 {
		return n, nil
	}
	return 0, fmt.Errorf("the Service's target port %q is no port of %s", tp.StrVal, p.Name)
}

// leaderProxyPort is the port at which the leader's forwarding proxy
// takes its peers' traffic (GET /leader, leader.proxy), 0 without a proxy.
func (d *Deployment) leaderProxyPort(ctx context.Context, p corev1.Pod) int32 {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Status.PodIP+":4040/leader", nil)
	resp, err := d.N.HTTPClient(5 * time.Second).Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var l api.Leader
	if json.NewDecoder(resp.Body).Decode(&l) != nil || l.Leader == nil || l.Leader.Proxy == "" {
		return 0
	}
	_, port, _ := strings.Cut(l.Leader.Proxy, ":")
	n, _ := strconv.Atoi(port)
	return int32(n)
}

// listening are the TCP ports a pod listens on, on an address other than
// loopback, from the socket table of its network namespace as the kernel
// lists it for one of its containers' processes (/proc/<pid>/net/tcp,
// tcp6).
func (d *Deployment) listening(p corev1.Pod, container string) ([]int32, error) {
	id := ContainerID(p, container)
	if id == "" {
		return nil, fmt.Errorf("%s has no %s container running", p.Name, container)
	}
	pid, err := d.N.ContainerPID(id)
	if err != nil {
		return nil, err
	}
	var ports []int32
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[3] != "0A" { // LISTEN
				continue
			}
			addr, port, _ := strings.Cut(fs[1], ":")
			if loopback(addr) {
				continue
			}
			n, err := strconv.ParseInt(port, 16, 32)
			if err == nil && !slices.Contains(ports, int32(n)) {
				ports = append(ports, int32(n))
			}
		}
	}
	slices.Sort(ports)
	return ports, nil
}

// loopback: 127.x in /proc's byte order (0100007F), or ::1.
func loopback(hexAddr string) bool {
	b, err := hex.DecodeString(hexAddr)
	if err != nil {
		return false
	}
	if len(b) == 4 {
		return b[3] == 127
	}
	return hexAddr == "00000000000000000000000001000000"
}
