package manifests

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/electd/electd/internal/kube"
)

// electd.participantGate adds the readiness gate, tells electd, and grants
// exactly the gate's calls (get and patch pods/status) to electd alone, in
// every routing; off, nothing of it renders (docs/kubernetes.md, "The
// participant gate").
func TestChartParticipantGate(t *testing.T) {
	gateRule := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"get", "patch"}}
	for _, c := range []struct {
		routing string
		rules   int // rules of the Role, the gate's included
	}{
		{"readiness", 1},
		{"proxy", 1},
		{"label", 4}, // the label's list and patch, the gate's, the Lease's two
	} {
		t.Run(c.routing, func(t *testing.T) {
			objs := decodeAll(t, "helm template", render(t, "--set", "routing="+c.routing, "--set", "app.name=web",
				"--set", "electd.participantGate=true"))
			d, sc := sidecar(t, objs)
			spec := d.Spec.Template.Spec
			want := []corev1.PodReadinessGate{{ConditionType: kube.GateCondition}}
			if !reflect.DeepEqual(spec.ReadinessGates, want) {
				t.Errorf("readinessGates %+v, want %+v", spec.ReadinessGates, want)
			}
			env := envOf(sc)
			checkEnv(t, env, map[string]string{"ELECTD_KUBERNETES_PARTICIPANT_GATE": "true", "ELECTD_ID": ""})
			if ns := env["POD_NAMESPACE"].ValueFrom; ns == nil || ns.FieldRef == nil || ns.FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("POD_NAMESPACE: %+v, want the downward API's metadata.namespace", env["POD_NAMESPACE"])
			}
			checkTokenOnlyElectd(t, spec) // the gate's calls need the token
			role := objectOf[*rbacv1.Role](t, objs, "Role", "web-electd")
			if len(role.Rules) != c.rules || !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return reflect.DeepEqual(r, gateRule) }) {
				t.Errorf("Role rules %+v: want %d, the gate's %+v among them", role.Rules, c.rules, gateRule)
			}
			objectOf[*rbacv1.RoleBinding](t, objs, "RoleBinding", "web-electd")
			objectOf[*corev1.ServiceAccount](t, objs, "ServiceAccount", "web-electd")
		})
	}
	// Off (the default): no gate, no key, and no API access without routing: label.
	for _, routing := range []string{"readiness", "proxy", "label"} {
		objs := decodeAll(t, "helm template", render(t, "--set", "routing="+routing))
		d, sc := sidecar(t, objs)
		if g := d.Spec.Template.Spec.ReadinessGates; len(g) != 0 {
			t.Errorf("routing %s renders readinessGates %+v by default", routing, g)
		}
		if _, ok := envOf(sc)["ELECTD_KUBERNETES_PARTICIPANT_GATE"]; ok {
			t.Errorf("routing %s sets ELECTD_KUBERNETES_PARTICIPANT_GATE by default", routing)
		}
		for _, o := range objs {
			if o.kind == "Role" && routing != "label" {
				t.Errorf("routing %s renders %s by default", routing, o.key())
			}
		}
	}
}
