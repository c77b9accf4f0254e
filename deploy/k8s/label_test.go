package k8s

import (
	"math"
	"path"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/electd/electd/internal/kube"
)

// labelled is the label flavour's workload and what its electd is told.
type labelled struct {
	d     *appsv1.Deployment
	s     sidecar
	label string // ELECTD_KUBERNETES_LEADER_LABEL
	lease string // ELECTD_KUBERNETES_LEASE_NAME, may be empty
}

func labelFlavour(t *testing.T) (*manifests, labelled) {
	t.Helper()
	m := render(t, labelOverlay)
	var found []labelled
	for _, s := range sidecars(t, m) {
		e, ok := s.env["ELECTD_KUBERNETES_LEADER_LABEL"]
		if !ok {
			continue
		}
		for _, d := range m.deployments {
			if &d.Spec.Template == s.w.template {
				found = append(found, labelled{d: d, s: s, label: e.Value, lease: s.env["ELECTD_KUBERNETES_LEASE_NAME"].Value})
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d Deployments set ELECTD_KUBERNETES_LEADER_LABEL, want 1", labelOverlay, len(found))
	}
	return m, found[0]
}

// The Service selects the leader label on top of the workload's labels,
// and only the leader carries it.
func TestLabelFlavourRoutesByLabel(t *testing.T) {
	m, l := labelFlavour(t)
	if err := kube.ValidateLabelKey(l.label); err != nil {
		t.Fatalf("ELECTD_KUBERNETES_LEADER_LABEL: %v", err)
	}
	tmpl := l.d.Spec.Template.Labels
	if _, ok := tmpl[l.label]; ok {
		t.Errorf("the pod template carries %s itself: every pod would be selected", l.label)
	}
	leader := labels.Merge(tmpl, labels.Set{l.label: "true"})
	routed := 0
	for _, svc := range m.services {
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		if !sel.Matches(leader) {
			continue
		}
		routed++
		if sel.Matches(labels.Set(tmpl)) {
			t.Errorf("Service %s selects every pod of the Deployment, not only the labelled one", svc.Name)
		}
		if svc.Spec.PublishNotReadyAddresses || svc.Spec.ClusterIP == corev1.ClusterIPNone {
			t.Errorf("Service %s: want a ClusterIP Service of Ready pods", svc.Name)
		}
		for _, p := range svc.Spec.Ports {
			if probePort(&l.d.Spec.Template.Spec.Containers[0], p.TargetPort) <= 0 {
				t.Errorf("Service %s port %s: targetPort %s is no port of the app", svc.Name, p.Name, p.TargetPort.String())
			}
		}
	}
	if routed != 1 {
		t.Errorf("%d Services select the leader's pod, want 1", routed)
	}
}

// With every pod Ready, the Deployment controller's ordinary arithmetic
// applies: a rolling update that surges one new pod and removes an old one
// only once the new one is Ready keeps the others serving and finishes (so
// `kubectl rollout status` does), a failing image stalls it with the old
// pods up, the old leader hands over to a new pod, and the budget lets one
// pod go at a time.
func TestLabelFlavourRolloutAndDrain(t *testing.T) {
	m, l := labelFlavour(t)
	checkOrdinaryRollout(t, m, l.d)
}

// checkOrdinaryRollout checks a Deployment whose every joined pod is Ready:
// a rolling update that brings one new pod before an old one goes (so the
// leader hands over to a pod of the new ReplicaSet, docs/design/handover.md
// "Handoff"), whose stall is reported (a progress deadline), and a budget
// that lets one pod go at a time.
func checkOrdinaryRollout(t *testing.T, m *manifests, d *appsv1.Deployment) {
	t.Helper()
	n := int(replicas(d.Spec.Replicas))
	if n < 2 {
		t.Fatalf("%d replica(s) leaves no follower to take over", n)
	}
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxUnavailable == nil {
		t.Fatalf("strategy %+v, want RollingUpdate with maxUnavailable", d.Spec.Strategy)
	}
	mu, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, n, false)
	if err != nil {
		t.Fatal(err)
	}
	if mu != 0 {
		t.Errorf("maxUnavailable resolves to %d of %d, want 0: an old pod goes only once a new one has joined, "+
			"so the leader hands over to a new pod", mu, n)
	}
	if ms, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, n, true); err != nil || ms != 1 {
		t.Errorf("maxSurge resolves to %d of %d (%v), want 1: one new pod at a time", ms, n, err)
	}
	if p := d.Spec.ProgressDeadlineSeconds; p == nil || *p == math.MaxInt32 || *p > 3600 {
		t.Errorf("progressDeadlineSeconds %v: with every pod Ready a stuck rollout must be reported", p)
	}
	for _, pdb := range m.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			continue
		}
		desired, err := desiredHealthy(pdb, int32(n))
		if err != nil {
			t.Fatal(err)
		}
		if allowed := int32(n) - desired; allowed != 1 {
			t.Errorf("PodDisruptionBudget %s allows %d disruptions of %d Ready pods, want 1", pdb.Name, allowed, n)
		}
		return
	}
	t.Error("no PodDisruptionBudget covers the Deployment")
}

// rule is one thing RBAC may allow: verb on group/resource (name "" = any).
type rule struct{ group, resource, verb, name string }

// electdCalls are the API calls internal/kube makes, as RBAC sees them.
func electdCalls(lease string) []rule {
	calls := []rule{{"", "pods", "list", ""}, {"", "pods", "patch", ""}}
	if lease != "" {
		calls = append(calls, rule{"coordination.k8s.io", "leases", "create", ""},
			rule{"coordination.k8s.io", "leases", "get", lease}, rule{"coordination.k8s.io", "leases", "patch", lease})
	}
	return calls
}

// The Role bound to the Deployment's ServiceAccount grants exactly the
// calls electd makes (the real API server's RBAC is tested end to end in
// internal/kube).
func TestLabelFlavourRBACIsMinimal(t *testing.T) {
	m, l := labelFlavour(t)
	sa := l.d.Spec.Template.Spec.ServiceAccountName
	if sa == "" || sa == "default" {
		t.Fatalf("serviceAccountName %q: electd needs a ServiceAccount of its own", sa)
	}
	i := slices.IndexFunc(m.accounts, func(a *corev1.ServiceAccount) bool { return a.Name == sa })
	if i < 0 {
		t.Fatalf("ServiceAccount %s is not defined", sa)
	}
	if a := m.accounts[i].AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("ServiceAccount %s: automountServiceAccountToken must be false (electd mounts its token itself)", sa)
	}
	var granted []rule
	for _, b := range m.bindings {
		bound := slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Kind == "ServiceAccount" && s.Name == sa })
		if !bound || b.RoleRef.Kind != "Role" {
			continue
		}
		for _, r := range m.roles {
			if r.Name != b.RoleRef.Name {
				continue
			}
			for _, pr := range r.Rules {
				names := pr.ResourceNames
				if len(names) == 0 {
					names = []string{""}
				}
				for _, g := range pr.APIGroups {
					for _, res := range pr.Resources {
						for _, v := range pr.Verbs {
							for _, n := range names {
								granted = append(granted, rule{g, res, v, n})
							}
						}
					}
				}
			}
		}
	}
	want := electdCalls(l.lease)
	for _, g := range granted {
		if !slices.Contains(want, g) {
			t.Errorf("the Role grants %+v, which electd never needs", g)
		}
	}
	for _, w := range want {
		if !slices.Contains(granted, w) {
			t.Errorf("the Role does not grant %+v, which electd needs", w)
		}
	}
}

// The API credentials reach the electd container only, at the in-cluster
// paths electd reads by default, with a token the kubelet rotates.
func TestLabelFlavourTokenOnlyForElectd(t *testing.T) {
	_, l := labelFlavour(t)
	spec := &l.d.Spec.Template.Spec
	if a := spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("automountServiceAccountToken must stay false: the app container gets no token")
	}
	dir := path.Dir(kube.DefaultTokenFile)
	var vol string
	for _, c := range allContainers(spec) {
		for _, vm := range c.VolumeMounts {
			if vm.MountPath != dir {
				continue
			}
			if c != l.s.c {
				t.Errorf("container %s mounts %s", c.Name, dir)
			}
			vol = vm.Name
		}
	}
	if vol == "" {
		t.Fatalf("electd mounts nothing at %s", dir)
	}
	files := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.Name != vol || v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			switch {
			case src.ServiceAccountToken != nil:
				files[src.ServiceAccountToken.Path] = true
				if e := src.ServiceAccountToken.ExpirationSeconds; e == nil || *e > 24*3600 {
					t.Errorf("token expirationSeconds %v: keep it short, electd re-reads the rotated file", e)
				}
			case src.ConfigMap != nil && src.ConfigMap.Name == "kube-root-ca.crt":
				for _, it := range src.ConfigMap.Items {
					files[it.Path] = it.Key == "ca.crt"
				}
			case src.DownwardAPI != nil:
				for _, it := range src.DownwardAPI.Items {
					files[it.Path] = it.FieldRef != nil && it.FieldRef.FieldPath == "metadata.namespace"
				}
			}
		}
	}
	for _, f := range []string{kube.DefaultTokenFile, kube.DefaultCAFile, kube.DefaultNamespaceFile} {
		if !files[strings.TrimPrefix(f, dir+"/")] {
			t.Errorf("volume %s does not provide %s", vol, f)
		}
	}
	for _, k := range []string{"POD_NAME", "POD_NAMESPACE"} {
		e, ok := l.s.env[k]
		if !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
			t.Errorf("%s must come from the downward API", k)
		}
	}
}
