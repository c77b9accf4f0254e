package k8s

import (
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// source is where a connection comes from, as NetworkPolicy sees it.
type source = Source

// ownNamespace labels the namespace the manifests are applied to; the
// tests' other namespaces differ.
var ownNamespace = labels.Set{"kubernetes.io/metadata.name": "apps"}

func inNamespace(ns string, pod labels.Set) source {
	return source{Namespace: labels.Set{"kubernetes.io/metadata.name": ns}, Pod: pod}
}

// admitted is Admits for a pod of w in ownNamespace.
func admitted(t *testing.T, pols []*networkingv1.NetworkPolicy, src source, w workload, port int32) bool {
	t.Helper()
	ok, err := Admits(pols, src, Destination{Namespace: ownNamespace, Pod: labels.Set(w.template.Labels), Spec: &w.template.Spec}, port)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func namedPort(w workload, name string) int32 { return NamedPort(&w.template.Spec, name) }

// netWorld is what the connectivity checks need from one flavour.
type netWorld struct {
	app, zk            workload
	electdPort         int32
	appPort            int32 // the app container's port
	proxyPort          int32 // electd's forwarding proxy, the Service's target; 0: none (the Service targets the app)
	peerPort           int32 // where the other pods' proxies forward to the leader's (proxy.peer_listen); 0: no proxy
	zkClient           int32
	zkQuorum, zkLeader int32
	sources            map[string]source
}

func newNetWorld(t *testing.T, m *manifests) netWorld {
	t.Helper()
	s := sidecars(t, m)[0]
	var zk workload
	for _, w := range m.workloads() {
		if w.ref == "StatefulSet zookeeper" {
			zk = w
		}
	}
	if zk.template == nil {
		t.Fatal("no StatefulSet zookeeper")
	}
	leader := labels.Set(s.w.template.Labels)
	if l, ok := s.env["ELECTD_KUBERNETES_LEADER_LABEL"]; ok {
		leader = labels.Merge(leader, labels.Set{l.Value: "true"})
	}
	appPort, proxyPort := int32(-1), int32(0)
	for _, svc := range m.services {
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(leader) {
			continue
		}
		appPort = probePort(&s.w.template.Spec.Containers[0], svc.Spec.Ports[0].TargetPort)
		if appPort <= 0 { // the proxy flavour: the Service targets electd's proxy
			proxyPort = probePort(s.c, svc.Spec.Ports[0].TargetPort)
			appPort = probePort(&s.w.template.Spec.Containers[0], intstr.FromString("http"))
		}
	}
	if appPort <= 0 || proxyPort < 0 {
		t.Fatal("no Service reaches the leader's app port or electd's proxy")
	}
	peerPort := int32(0)
	if proxyPort > 0 {
		peerPort = listenPort(t, s, "ELECTD_PROXY_PEER_LISTEN")
	}
	own := func(pod labels.Set) source { return source{Namespace: ownNamespace, Pod: pod} }
	return netWorld{
		app: s.w, zk: zk, electdPort: s.port, appPort: appPort, proxyPort: proxyPort, peerPort: peerPort,
		zkClient: 2181, zkQuorum: 2888, zkLeader: 3888, // zoo.cfg's, checked by zookeeperPodAddresses
		sources: map[string]source{
			"the kubelet":        {Node: true},
			"another electd pod": own(labels.Set(s.w.template.Labels)),
			"a ZooKeeper peer":   own(labels.Set(zk.template.Labels)),
			"another pod":        own(labels.Set{"run": "curl"}),
			"an unlabelled pod":  own(labels.Set{}),
			// The same labels as electd's pods, in another namespace.
			"a look-alike elsewhere":  inNamespace("other", labels.Set(s.w.template.Labels)),
			"Prometheus (monitoring)": inNamespace("monitoring", labels.Set{"app.kubernetes.io/name": "prometheus"}),
		},
	}
}

// listenPort is the port of an electd listen address set in its
// environment (":4042").
func listenPort(t *testing.T, s sidecar, env string) int32 {
	t.Helper()
	e, ok := s.env[env]
	if !ok {
		t.Fatalf("%s: electd sets no %s", s.w.ref, env)
	}
	_, p, err := net.SplitHostPort(e.Value)
	n, err2 := strconv.ParseUint(p, 10, 16)
	if err != nil || err2 != nil || n == 0 {
		t.Fatalf("%s: %s=%q is not [host]:port", s.w.ref, env, e.Value)
	}
	return int32(n)
}

// connection is one expectation: from a source to a workload's port.
type connection struct {
	from  string
	to    string // "app" or "zookeeper"
	port  int32
	allow bool
	why   string
}

func (nw netWorld) expectations() []connection {
	var cs []connection
	// add expects the allowed sources (nil: every one) to get in, and no other.
	add := func(to string, port int32, allowed []string, why string) {
		for name := range nw.sources {
			allow := allowed == nil || slices.Contains(allowed, name)
			cs = append(cs, connection{name, to, port, allow, why})
		}
	}
	if nw.proxyPort > 0 {
		add("app", nw.proxyPort, nil, "the proxy's port stays reachable (the Service)")
		add("app", nw.peerPort, []string{"the kubelet", "another electd pod"}, "the peer port is for the other pods' proxies alone")
		add("app", nw.appPort, []string{"the kubelet"}, "only its proxy reaches the app, on localhost")
	} else {
		add("app", nw.appPort, nil, "the app's own port stays reachable (the Service)")
	}
	add("app", nw.electdPort, []string{"the kubelet"}, "only the kubelet's probes need electd's port; the app uses localhost")
	add("zookeeper", nw.zkClient, []string{"the kubelet", "another electd pod"}, "only electd's pods are ZooKeeper's clients")
	for _, p := range []int32{nw.zkQuorum, nw.zkLeader} {
		add("zookeeper", p, []string{"the kubelet", "a ZooKeeper peer"}, "the quorum ports are for the servers themselves")
	}
	add("zookeeper", 8080, []string{"the kubelet"}, "ZooKeeper's admin server is for its liveness probe only")
	return cs
}

// The NetworkPolicies admit exactly what docs/design/session-and-faults.md ("Threat model")
// says: the app's port from anywhere, electd's port to the kubelet alone,
// ZooKeeper's client port to electd's pods alone and its quorum ports to
// its peers. Each policy selects the pods it is meant for.
func TestNetworkPoliciesAdmitWhatTheDesignSays(t *testing.T) {
	forEachFlavour(t, checkNetworkPolicies)
}

func checkNetworkPolicies(t *testing.T, m *manifests) {
	nw := newNetWorld(t, m)
	targets := map[string]workload{"app": nw.app, "zookeeper": nw.zk}
	for _, p := range m.policies {
		var selected []string
		for _, w := range m.workloads() {
			ok, err := selects(&p.Spec.PodSelector, labels.Set(w.template.Labels))
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				selected = append(selected, w.ref)
			}
		}
		if want := targets[p.Name].ref; len(selected) != 1 || selected[0] != want {
			t.Errorf("NetworkPolicy %s selects %v, want [%s]", p.Name, selected, want)
		}
		for i, r := range p.Spec.Ingress {
			for _, port := range r.Ports {
				if port.Port != nil && port.Port.StrVal != "" && namedPort(targets[p.Name], port.Port.StrVal) < 0 {
					t.Errorf("NetworkPolicy %s rule %d: port %q is no container port of %s", p.Name, i, port.Port.StrVal, targets[p.Name].ref)
				}
			}
		}
	}
	for _, c := range nw.expectations() {
		if got := admitted(t, m.policies, nw.sources[c.from], targets[c.to], c.port); got != c.allow {
			t.Errorf("%s -> %s:%d admitted = %v, want %v: %s", c.from, c.to, c.port, got, c.allow, c.why)
		}
	}
}

// commentedRule matches the commented-out Prometheus rule in
// networkpolicy.yaml: lines of "    # " followed by YAML, after the line
// that introduces it.
var commentedRule = regexp.MustCompile(`(?m)^    # (- from:\n(?:    #   .*\n)+)`)

// The commented Prometheus rule, once uncommented, is a valid rule that
// admits Prometheus to electd's port and nothing else, so the example in
// the file stays true.
func TestCommentedPrometheusRuleWorks(t *testing.T) {
	data, err := os.ReadFile("networkpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	loc := commentedRule.FindSubmatchIndex(data)
	if loc == nil {
		t.Fatal("networkpolicy.yaml has no commented-out Prometheus rule (\"    # - from:\")")
	}
	block := string(data[loc[0]:loc[1]])
	uncommented := strings.ReplaceAll(strings.TrimPrefix(block, "    # "), "\n    # ", "\n    ")
	patched := string(data[:loc[0]]) + "    " + uncommented + string(data[loc[1]:])
	m := load(t)
	var pols []*networkingv1.NetworkPolicy
	for _, doc := range splitDocuments([]byte(patched)) {
		obj, _, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("networkpolicy.yaml with the rule uncommented: %v\n%s", err, patched)
		}
		pols = append(pols, obj.(*networkingv1.NetworkPolicy))
	}
	for _, p := range m.policies {
		if p.Name != "app" {
			pols = append(pols, p)
		}
	}
	nw := newNetWorld(t, m)
	if !admitted(t, pols, nw.sources["Prometheus (monitoring)"], nw.app, nw.electdPort) {
		t.Errorf("the uncommented rule does not admit Prometheus in namespace monitoring to :%d", nw.electdPort)
	}
	for _, from := range []string{"another pod", "a look-alike elsewhere", "another electd pod"} {
		if admitted(t, pols, nw.sources[from], nw.app, nw.electdPort) {
			t.Errorf("the uncommented rule admits %s to :%d", from, nw.electdPort)
		}
	}
}

// The model itself: a pod no policy selects is open, a policy with no
// rules closes it, and the node always gets in.
func TestAdmittedModel(t *testing.T) {
	w := workload{ref: "x", template: &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 80}}}}},
	}}
	other := source{Namespace: ownNamespace, Pod: labels.Set{"x": "y"}}
	if !admitted(t, nil, other, w, 80) {
		t.Error("no policy: not admitted")
	}
	deny := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}}
	if admitted(t, []*networkingv1.NetworkPolicy{deny}, other, w, 80) {
		t.Error("a policy without rules: admitted")
	}
	if !admitted(t, []*networkingv1.NetworkPolicy{deny}, source{Node: true}, w, 80) {
		t.Error("the node: not admitted")
	}
	egressOnly := deny.DeepCopy()
	egressOnly.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	if !admitted(t, []*networkingv1.NetworkPolicy{egressOnly}, other, w, 80) {
		t.Error("an egress-only policy: ingress not admitted")
	}
}
