package k8s

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// proxied is the proxy flavour's workload and its electd's proxy settings.
type proxied struct {
	d      *appsv1.Deployment
	s      sidecar
	listen int32 // the port of ELECTD_PROXY_LISTEN
	app    string
}

func proxyFlavour(t *testing.T) (*manifests, proxied) {
	t.Helper()
	m := render(t, proxyOverlay)
	var found []proxied
	for _, s := range sidecars(t, m) {
		e, ok := s.env["ELECTD_PROXY_LISTEN"]
		if !ok {
			continue
		}
		_, port, err := net.SplitHostPort(e.Value)
		n, err2 := strconv.ParseUint(port, 10, 16)
		if err != nil || err2 != nil || n == 0 {
			t.Fatalf("ELECTD_PROXY_LISTEN %q: want :port", e.Value)
		}
		for _, d := range m.deployments {
			if &d.Spec.Template == s.w.template {
				found = append(found, proxied{d: d, s: s, listen: int32(n), app: s.env["ELECTD_PROXY_APP"].Value})
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d Deployments set ELECTD_PROXY_LISTEN, want 1", proxyOverlay, len(found))
	}
	return m, found[0]
}

// The Service selects every pod of the Deployment (no leader label) and
// targets electd's proxy, the sidecar's port named proxy, which is the
// port the proxy listens on; the proxy sends to the app container's port
// on localhost, and peers reach it at the pod's IP (POD_IP, from which
// electd derives proxy.advertise).
func TestProxyFlavourRoutesThroughTheProxy(t *testing.T) {
	m, p := proxyFlavour(t)
	tmpl := p.d.Spec.Template
	app := &tmpl.Spec.Containers[0]
	if want := "127.0.0.1:" + strconv.Itoa(int(probePort(app, intstr.FromString("http")))); p.app != want {
		t.Errorf("ELECTD_PROXY_APP = %q, want the app container's port on localhost, %s", p.app, want)
	}
	if e, ok := p.s.env["POD_IP"]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Error("POD_IP must come from the downward API's status.podIP: electd publishes $(POD_IP):<proxy port> to its peers")
	}
	if _, ok := p.s.env["ELECTD_PROXY_ADVERTISE"]; ok {
		t.Error("ELECTD_PROXY_ADVERTISE is set: electd derives it from POD_IP and the proxy's port")
	}
	if got := probePort(p.s.c, intstr.FromString("proxy")); got != p.listen {
		t.Errorf("electd's port named proxy is %d, want ELECTD_PROXY_LISTEN's %d", got, p.listen)
	}
	routed := 0
	for _, svc := range m.services {
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		if !sel.Matches(labels.Set(tmpl.Labels)) {
			continue
		}
		routed++
		if svc.Spec.PublishNotReadyAddresses || svc.Spec.ClusterIP == corev1.ClusterIPNone {
			t.Errorf("Service %s: want a ClusterIP Service of Ready pods", svc.Name)
		}
		for _, port := range svc.Spec.Ports {
			if got := probePort(p.s.c, port.TargetPort); got != p.listen {
				t.Errorf("Service %s port %s: targetPort %s resolves to %d on electd, want the proxy's %d (never the app's own port)",
					svc.Name, port.Name, port.TargetPort.String(), got, p.listen)
			}
		}
	}
	if routed != 1 {
		t.Errorf("%d Services select the Deployment's pods, want 1", routed)
	}
}

// With every pod Ready, rollouts and budgets are ordinary: a rolling update
// never lowers capacity (a new pod is Ready before an old one goes, and the
// old leader hands over to the newest), it finishes and a stuck one is
// reported, and the budget lets one pod go at a time.
func TestProxyFlavourRolloutAndDrain(t *testing.T) {
	m, p := proxyFlavour(t)
	checkOrdinaryRollout(t, m, p.d)
	ms, err := intstr.GetScaledValueFromIntOrPercent(p.d.Spec.Strategy.RollingUpdate.MaxSurge, int(replicas(p.d.Spec.Replicas)), true)
	if err != nil || ms < 1 {
		t.Errorf("maxSurge %v (%v): want at least 1, a new pod Ready before an old one goes", p.d.Spec.Strategy.RollingUpdate.MaxSurge, err)
	}
	// A new pod is Ready once its app listens; its electd stands at its next
	// check of the app. An old leader deleted before then hands over to an
	// old pod (docs/design/handover.md, "Handoff").
	interval, ok := duration(p.s.env["ELECTD_APP_HEALTH_INTERVAL"].Value)
	timeout := time.Second // app.health_timeout's default
	if e, set := p.s.env["ELECTD_APP_HEALTH_TIMEOUT"]; set {
		timeout, ok = duration(e.Value)
	}
	if ready := time.Duration(p.d.Spec.MinReadySeconds) * time.Second; !ok || ready <= interval+timeout {
		t.Errorf("minReadySeconds %d: want more than the app's check interval and timeout (%v), so that a new pod counts once its electd stands",
			p.d.Spec.MinReadySeconds, interval+timeout)
	}
}

// The pod needs no API credentials: no ServiceAccount of its own, no token
// mounted into any container.
func TestProxyFlavourNeedsNoToken(t *testing.T) {
	m, p := proxyFlavour(t)
	spec := &p.d.Spec.Template.Spec
	if a := spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("automountServiceAccountToken must stay false")
	}
	if spec.ServiceAccountName != "" {
		t.Errorf("serviceAccountName %q: the proxy flavour needs no API access", spec.ServiceAccountName)
	}
	for _, v := range spec.Volumes {
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil {
					t.Errorf("volume %s projects a ServiceAccount token", v.Name)
				}
			}
		}
	}
	if len(m.roles) != 0 || len(m.bindings) != 0 || len(m.accounts) != 0 {
		t.Errorf("the proxy flavour renders %d Roles, %d RoleBindings, %d ServiceAccounts; want none", len(m.roles), len(m.bindings), len(m.accounts))
	}
}

// A deleted pod's electd gets its SIGTERM once its app has stopped, and
// its proxy must keep forwarding while kube-proxy takes the pod out of the
// Service: shutdown_grace covers that lag (a second or two on the node),
// and the pod's grace period covers shutdown_grace and shutdown_timeout.
func TestProxyFlavourForwardsThroughShutdown(t *testing.T) {
	_, p := proxyFlavour(t)
	grace, ok := duration(p.s.env["ELECTD_SHUTDOWN_GRACE"].Value)
	if !ok || grace < 3*time.Second {
		t.Errorf("ELECTD_SHUTDOWN_GRACE %q: want at least 3s, so the proxy forwards until kube-proxy stops sending to the pod",
			p.s.env["ELECTD_SHUTDOWN_GRACE"].Value)
	}
	timeout, ok := duration(p.s.env["ELECTD_SHUTDOWN_TIMEOUT"].Value)
	if !ok {
		timeout = 10 * time.Second
	}
	if tg := p.d.Spec.Template.Spec.TerminationGracePeriodSeconds; tg == nil || time.Duration(*tg)*time.Second < grace+timeout {
		t.Errorf("terminationGracePeriodSeconds %v does not cover shutdown_grace %v + shutdown_timeout %v", tg, grace, timeout)
	}
}

// The other pods' proxies forward to this one on a port of its own
// (ELECTD_PROXY_PEER_LISTEN, the sidecar's port named peer), which the
// NetworkPolicy admits from the app's other pods (netpol_test.go: from
// them alone); and a leader whose
// application stops answering hands leadership on: electd checks the app
// (ELECTD_APP_HEALTH_URL, on its port on localhost) often enough to
// withdraw within seconds.
func TestProxyFlavourPeersAndAppHealth(t *testing.T) {
	m, p := proxyFlavour(t)
	_, port, err := net.SplitHostPort(p.s.env["ELECTD_PROXY_PEER_LISTEN"].Value)
	n, err2 := strconv.ParseUint(port, 10, 16)
	if err != nil || err2 != nil || n == 0 || int32(n) == p.listen {
		t.Fatalf("ELECTD_PROXY_PEER_LISTEN %q: want :port, not the proxy's %d", p.s.env["ELECTD_PROXY_PEER_LISTEN"].Value, p.listen)
	}
	if got := probePort(p.s.c, intstr.FromString("peer")); got != int32(n) {
		t.Errorf("electd's port named peer is %d, want ELECTD_PROXY_PEER_LISTEN's %d", got, n)
	}
	own := source{Namespace: ownNamespace, Pod: labels.Set(p.s.w.template.Labels)}
	if !admitted(t, m.policies, own, p.s.w, int32(n)) {
		t.Errorf("the NetworkPolicy does not admit the app's other pods to the peer port %d", n)
	}
	url := p.s.env["ELECTD_APP_HEALTH_URL"].Value
	if !strings.HasPrefix(url, "http://"+p.app+"/") {
		t.Errorf("ELECTD_APP_HEALTH_URL %q: want a path of the app at %s", url, p.app)
	}
	if d, ok := duration(p.s.env["ELECTD_APP_HEALTH_INTERVAL"].Value); !ok || d > 5*time.Second {
		t.Errorf("ELECTD_APP_HEALTH_INTERVAL %q: want at most 5s, so that a hung application is withdrawn within seconds",
			p.s.env["ELECTD_APP_HEALTH_INTERVAL"].Value)
	}
}

// Every request goes through electd here, and its peers give a leader's
// proxy up when it answers no ping within half of proxy.peer_timeout: under
// contention a container gets CPU in proportion to its request, so electd
// asks for no less than the busiest neighbour the manifests ship, a
// ZooKeeper server, which takes all it can get while it starts (on the test
// node, at 10m against 100m, electd's threads waited seconds for a CPU
// while a restarted server started, and the proxies failed requests).
func TestProxyFlavourElectdCPUMatchesZooKeeper(t *testing.T) {
	m, p := proxyFlavour(t)
	got := p.s.c.Resources.Requests[corev1.ResourceCPU]
	if len(m.statefulSets) == 0 {
		t.Fatal("no ZooKeeper StatefulSet in the proxy flavour")
	}
	for _, s := range m.statefulSets {
		for _, c := range s.Spec.Template.Spec.Containers {
			if zk := c.Resources.Requests[corev1.ResourceCPU]; got.Cmp(zk) < 0 {
				t.Errorf("electd requests %s CPU, less than %s's container %s (%s)", got.String(), s.Name, c.Name, zk.String())
			}
		}
	}
}

// peerKeySecret is the Secret of the proxies' peer key (docs/kubernetes.md,
// "Secrets").
const peerKeySecret = "electd-proxy-peer-key"

// The proxies' peer key is a file from a required Secret volume that only
// electd mounts: until the Secret exists the pod does not start, and
// electd never opens its peer port without the key.
func TestProxyFlavourPeerKeyIsARequiredSecretFile(t *testing.T) {
	m, p := proxyFlavour(t)
	checkNoSecretIsShipped(t, m)
	if _, ok := p.s.env["ELECTD_PROXY_PEER_KEY"]; ok {
		t.Errorf("ELECTD_PROXY_PEER_KEY is set; give the key as a file (ELECTD_PROXY_PEER_KEY_FILE)")
	}
	e := p.s.env["ELECTD_PROXY_PEER_KEY_FILE"]
	vol, item := secretFile(p.s.w.template, p.s.c, e.Value)
	if vol == nil {
		t.Fatalf("ELECTD_PROXY_PEER_KEY_FILE %q is in no Secret volume electd mounts", e.Value)
	}
	if vol.Secret.SecretName != peerKeySecret || item != "key" {
		t.Errorf("%s is Secret %s key %q, want %s key key (docs/kubernetes.md's command)", e.Value, vol.Secret.SecretName, item, peerKeySecret)
	}
	if o := vol.Secret.Optional; o != nil && *o {
		t.Errorf("volume %s is optional: without the Secret electd would exit 2 and restart in a loop", vol.Name)
	}
	for _, c := range allContainers(&p.s.w.template.Spec) {
		for _, vm := range c.VolumeMounts {
			if vm.Name == vol.Name && (c != p.s.c || !vm.ReadOnly) {
				t.Errorf("container %s mounts the peer key (read-only %v); only electd may, read-only", c.Name, vm.ReadOnly)
			}
		}
	}
}
