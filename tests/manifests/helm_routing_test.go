package manifests

import (
	"maps"
	"path"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/electd/electd/internal/kube"
)

// checkTokenOnlyElectd checks the pod runs as the chart's web-electd and
// only electd's container gets its API token.
func checkTokenOnlyElectd(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	if spec.ServiceAccountName != "web-electd" {
		t.Errorf("serviceAccountName %q, want web-electd", spec.ServiceAccountName)
	}
	if a := spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("automountServiceAccountToken is not false: the app container would get the token")
	}
	dir := path.Dir(kube.DefaultTokenFile)
	for _, ctr := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		mounts := slices.ContainsFunc(ctr.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == dir })
		if mounts != (ctr.Name == "electd") {
			t.Errorf("container %s mounts %s: %v, want only electd to", ctr.Name, dir, mounts)
		}
	}
}

// objectOf finds the rendered object kind/name.
func objectOf[T any](t *testing.T, objs []object, kind, name string) T {
	t.Helper()
	for _, o := range objs {
		if o.kind == kind && o.name == name {
			return o.obj.(T)
		}
	}
	t.Fatalf("no %s/%s among %v", kind, name, kinds(objs))
	var zero T
	return zero
}

// routing: label with its values set lands where the label flavour needs
// it: the Service selects the label, electd is told it, the Role grants
// the Lease only when there is one, and the API token reaches electd alone.
// (The defaults of routing: label equal deploy/k8s-label: render_test.go.)
func TestChartLabelRoutingValues(t *testing.T) {
	for _, c := range []struct {
		name      string
		args      []string
		wantLease string // "" = no Lease
	}{
		{"no lease", []string{"--set", "label.lease.enabled=false"}, ""},
		{"named lease", []string{"--set", "label.lease.name=web-primary"}, "web-primary"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--set", "routing=label", "--set", "app.name=web", "--set", "label.key=example.com/primary"}, c.args...)
			objs := decodeAll(t, "helm template", render(t, args...))
			d, sc := sidecar(t, objs)
			env := envOf(sc)

			svc := objectOf[*corev1.Service](t, objs, "Service", "web")
			if svc.Spec.Selector["example.com/primary"] != "true" || svc.Spec.Selector["app.kubernetes.io/name"] != "web" {
				t.Errorf("Service selector %v, want the app's labels and example.com/primary=true", svc.Spec.Selector)
			}
			if _, ok := d.Spec.Template.Labels["example.com/primary"]; ok {
				t.Error("the pod template carries the leader label: every pod would be selected")
			}
			checkEnv(t, env, map[string]string{"ELECTD_KUBERNETES_LEADER_LABEL": "example.com/primary", "ELECTD_KUBERNETES_LEASE_NAME": c.wantLease})
			if ns := env["POD_NAMESPACE"].ValueFrom; ns == nil || ns.FieldRef == nil || ns.FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("POD_NAMESPACE: %+v, want the downward API's metadata.namespace", env["POD_NAMESPACE"])
			}
			checkEveryPodReady(t, objs, d, sc)

			spec := d.Spec.Template.Spec
			checkTokenOnlyElectd(t, spec)

			role := objectOf[*rbacv1.Role](t, objs, "Role", "web-electd")
			want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "patch"}}}
			if c.wantLease != "" {
				want = append(want,
					rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
					rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{c.wantLease}, Verbs: []string{"get", "patch"}})
			}
			if !reflect.DeepEqual(role.Rules, want) {
				t.Errorf("Role rules %+v, want %+v", role.Rules, want)
			}
			rb := objectOf[*rbacv1.RoleBinding](t, objs, "RoleBinding", "web-electd")
			if rb.RoleRef.Name != "web-electd" || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "web-electd" {
				t.Errorf("RoleBinding %+v does not bind web-electd to its Role", rb)
			}
			sa := objectOf[*corev1.ServiceAccount](t, objs, "ServiceAccount", "web-electd")
			if a := sa.AutomountServiceAccountToken; a == nil || *a {
				t.Error("ServiceAccount web-electd: automountServiceAccountToken is not false")
			}
		})
	}
	// routing: readiness has no API access at all.
	for _, o := range decodeAll(t, "helm template", render(t)) {
		if o.kind == "ServiceAccount" || o.kind == "Role" || o.kind == "RoleBinding" {
			t.Errorf("routing: readiness renders %s", o.key())
		}
	}
}

// routing: proxy with its values set lands where the proxy flavour needs
// it: electd listens on proxy.port (its peers on proxy.peerPort) and
// forwards to app.port, whose proxy.appHealthPath it checks, the Service
// targets the proxy's port, the NetworkPolicy opens the proxy's port to all
// and the peer port to the app's pods, the app's to none, every pod is Ready (/readyz), the rollout never lowers capacity,
// shutdown_grace covers kube-proxy's lag unless set, and there is no API
// access. (The defaults of routing: proxy equal deploy/k8s-proxy:
// render_test.go.)
func TestChartProxyRoutingValues(t *testing.T) {
	objs := decodeAll(t, "helm template", render(t, "--set", "routing=proxy", "--set", "app.name=web",
		"--set", "proxy.port=9090", "--set", "proxy.peerPort=9191", "--set", "proxy.appHealthPath=/ready", "--set", "app.port=3000"))
	d, sc := sidecar(t, objs)
	checkEnv(t, envOf(sc), map[string]string{
		"ELECTD_PROXY_LISTEN":        ":9090",
		"ELECTD_PROXY_PEER_LISTEN":   ":9191",
		"ELECTD_PROXY_APP":           "127.0.0.1:3000",
		"ELECTD_APP_HEALTH_URL":      "http://127.0.0.1:3000/ready",
		"ELECTD_APP_HEALTH_INTERVAL": "2s",
		"ELECTD_SHUTDOWN_GRACE":      "5s",
	})
	if !slices.ContainsFunc(sc.Ports, func(p corev1.ContainerPort) bool { return p.Name == "proxy" && p.ContainerPort == 9090 }) ||
		!slices.ContainsFunc(sc.Ports, func(p corev1.ContainerPort) bool { return p.Name == "peer" && p.ContainerPort == 9191 }) {
		t.Errorf("electd's ports %+v lack proxy:9090 and peer:9191", sc.Ports)
	}
	svc := objectOf[*corev1.Service](t, objs, "Service", "web")
	if tp := svc.Spec.Ports[0].TargetPort; tp.String() != "proxy" {
		t.Errorf("Service targetPort %s, want the proxy's", tp.String())
	}
	if _, ok := svc.Spec.Selector["electd.io/leader"]; ok {
		t.Errorf("Service selector %v: with the proxy every pod takes traffic", svc.Spec.Selector)
	}
	np := objectOf[*networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", "web")
	if in := np.Spec.Ingress; len(in) != 2 || len(in[0].From) != 0 || len(in[0].Ports) != 1 || in[0].Ports[0].Port.String() != "9090" ||
		len(in[1].Ports) != 1 || in[1].Ports[0].Port.String() != "9191" || len(in[1].From) != 1 || in[1].From[0].NamespaceSelector != nil ||
		in[1].From[0].PodSelector == nil || !maps.Equal(in[1].From[0].PodSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("NetworkPolicy ingress %+v, want the proxy's port 9090 from anywhere and the peer port 9191 from the app's pods alone", np.Spec.Ingress)
	}
	checkEveryPodReady(t, objs, d, sc)
	if a := d.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || *a || d.Spec.Template.Spec.ServiceAccountName != "" {
		t.Error("routing: proxy needs no API token and no ServiceAccount")
	}
	for _, o := range objs {
		if o.kind == "ServiceAccount" || o.kind == "Role" || o.kind == "RoleBinding" {
			t.Errorf("routing: proxy renders %s", o.key())
		}
	}
	// electd.shutdownGrace, when set, wins.
	objs = decodeAll(t, "helm template", render(t, "--set", "routing=proxy", "--set", "electd.shutdownGrace=2s"))
	if _, sc := sidecar(t, objs); envOf(sc)["ELECTD_SHUTDOWN_GRACE"].Value != "2s" {
		t.Errorf("ELECTD_SHUTDOWN_GRACE = %q, want the 2s set", envOf(sc)["ELECTD_SHUTDOWN_GRACE"].Value)
	}
}

// networkPolicy.enabled: false renders none; networkPolicy.metricsFrom adds
// one rule that admits those peers to electd's port and nothing else.
func TestChartNetworkPolicyValues(t *testing.T) {
	for _, o := range decodeAll(t, "helm template", render(t, "--set", "networkPolicy.enabled=false")) {
		if o.kind == "NetworkPolicy" {
			t.Errorf("networkPolicy.enabled=false renders %s", o.key())
		}
	}

	objs := decodeAll(t, "helm template", render(t,
		"--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring"))
	np := objectOf[*networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", "app")
	if len(np.Spec.Ingress) != 2 {
		t.Fatalf("NetworkPolicy app has %d rules, want the app's port and the metrics rule", len(np.Spec.Ingress))
	}
	r := np.Spec.Ingress[1]
	wantFrom := []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}}
	if !reflect.DeepEqual(r.From, wantFrom) {
		t.Errorf("metrics rule from %+v, want %+v", r.From, wantFrom)
	}
	port := intstr.FromInt32(4040)
	if len(r.Ports) != 1 || r.Ports[0].Port == nil || *r.Ports[0].Port != port {
		t.Errorf("metrics rule ports %+v, want 4040 only", r.Ports)
	}
	// The ZooKeeper policy admits this release's electd pods: the app's
	// selector labels, release included.
	zk := objectOf[*networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", "app-zookeeper")
	d, _ := sidecar(t, objs)
	if got := zk.Spec.Ingress[0].From[0].PodSelector.MatchLabels; !reflect.DeepEqual(got, d.Spec.Selector.MatchLabels) {
		t.Errorf("ZooKeeper's client rule selects %v, want the Deployment's pods %v", got, d.Spec.Selector.MatchLabels)
	}
}

// checkEveryPodReady: where every pod is Ready, electd's readiness probe is
// /readyz, a rollout starts the new pod first, and the budget lets one go at a time.
func checkEveryPodReady(t *testing.T, objs []object, d *appsv1.Deployment, sc *corev1.Container) {
	t.Helper()
	if p := sc.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("electd's readiness probe %+v, want /readyz", p)
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable.String() != "0" || ru.MaxSurge.String() != "1" {
		t.Errorf("rollout %+v, want maxSurge 1 and maxUnavailable 0: new pod first", d.Spec.Strategy)
	}
	if pdb := objectOf[*policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", "web"); pdb.Spec.MaxUnavailable.String() != "1" {
		t.Errorf("budget maxUnavailable %v, want 1: every pod is Ready, one at a time may go", pdb.Spec.MaxUnavailable)
	}
}
