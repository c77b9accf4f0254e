package manifests

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/electd/electd/tests/harness/manifesttest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// object is one decoded Kubernetes object.
type object struct {
	kind, name string
	obj        any // *appsv1.Deployment, *corev1.Service, ...
}

func (o object) key() string { return o.kind + "/" + o.name }

// decodeAll decodes a YAML stream with deploy/k8s's strict decoder: unknown
// or duplicate fields and unexpected kinds are errors, and fail the test.
func decodeAll(t *testing.T, where string, data []byte) []object {
	t.Helper()
	var objs []object
	for i, doc := range manifesttest.SplitDocuments(data) {
		obj, tm, err := manifesttest.DecodeStrict(doc)
		if err != nil {
			t.Fatalf("%s, document %d: %v\n%s", where, i+1, err, doc)
		}
		meta := reflect.ValueOf(obj).Elem().FieldByName("ObjectMeta").Interface().(metav1.ObjectMeta)
		if meta.Name == "" {
			t.Fatalf("%s, document %d: %s without a name", where, i+1, tm.Kind)
		}
		objs = append(objs, object{tm.Kind, meta.Name, obj})
	}
	if len(objs) == 0 {
		t.Fatalf("%s: no objects", where)
	}
	return objs
}

// kustomizeObjects renders a kustomization of deploy/ (k8s, the gated
// flavour, or k8s-label) with kustomize, as `kubectl apply -k` would, and
// decodes its objects.
func kustomizeObjects(t *testing.T, dir string) []object {
	t.Helper()
	out, err := manifesttest.Kustomize(filepath.Join(repoRoot, "deploy", dir))
	if err != nil {
		t.Fatalf("kustomize deploy/%s: %v", dir, err)
	}
	return decodeAll(t, "kustomize deploy/"+dir, out)
}

// helmLabels are the labels the chart adds to what deploy/k8s has: who
// manages the object, and the release as part of every selector.
var helmLabels = []string{
	"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version",
}

// comparable turns an object into plain JSON values without Helm's labels,
// wherever they appear (metadata, selectors, templates, spread constraints).
func comparable(t *testing.T, o object) any {
	t.Helper()
	b, err := json.Marshal(o.obj)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, l := range helmLabels {
				delete(x, l)
			}
			for _, sub := range x {
				strip(sub)
			}
		case []any:
			for _, sub := range x {
				strip(sub)
			}
		}
	}
	strip(v)
	return v
}

// diff lists the paths where a and b differ.
func diff(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		var sorted []string
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			diff(path+"."+k, am[k], bm[k], out)
		}
		return
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		for i := range as {
			diff(fmt.Sprintf("%s[%d]", path, i), as[i], bs[i], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		*out = append(*out, fmt.Sprintf("%s: chart %s, kustomize %s", path, ja, jb))
	}
}

// sameNames are the values that give the chart's objects the names the
// kustomize manifests use (the release is "app", as their app).
var sameNames = []string{
	"--set", "zookeeper.name=zookeeper",
	"--set", "electd.adminToken.secretName=electd-admin",
	"--set", "electd.zookeeperAuth.secretName=electd-zookeeper-auth",
	"--set", "proxy.peerKey.secretName=electd-proxy-peer-key",
}

// With the names the kustomize manifests use, the chart's defaults render
// the same objects, field for field, as deploy/k8s, routing: label the
// same as deploy/k8s-label and routing: proxy as deploy/k8s-proxy: the same probes, rollout strategy, budget,
// security contexts, resources, environment, Secret references,
// NetworkPolicies and RBAC. Only Helm's labels differ.
func TestChartRendersTheKustomizeManifests(t *testing.T) {
	for _, c := range []struct {
		routing, dir string
	}{{"readiness", "k8s"}, {"label", "k8s-label"}, {"proxy", "k8s-proxy"}} {
		t.Run(c.routing, func(t *testing.T) {
			args := append(slices.Clone(sameNames), "--set", "routing="+c.routing)
			compareObjects(t, decodeAll(t, "helm template", render(t, args...)), kustomizeObjects(t, c.dir))
		})
	}
}

// compareObjects reports every object one side has and the other lacks,
// and every field where a shared object differs.
func compareObjects(t *testing.T, chartObjs, kustObjs []object) {
	t.Helper()
	byKey := map[string]object{}
	for _, o := range chartObjs {
		if _, dup := byKey[o.key()]; dup {
			t.Errorf("the chart renders %s twice", o.key())
		}
		byKey[o.key()] = o
	}
	var kustKeys []string
	for _, k := range kustObjs {
		kustKeys = append(kustKeys, k.key())
		c, ok := byKey[k.key()]
		if !ok {
			t.Errorf("the chart renders no %s", k.key())
			continue
		}
		for _, l := range helmLabels[:3] {
			if labels := metaLabels(c); labels[l] == "" {
				t.Errorf("chart's %s has no label %s", c.key(), l)
			}
		}
		var d []string
		diff(c.key(), comparable(t, c), comparable(t, k), &d)
		for _, line := range d {
			t.Error(line)
		}
	}
	for key := range byKey {
		if !slices.Contains(kustKeys, key) {
			t.Errorf("the chart renders %s, which kustomize does not", key)
		}
	}
	if len(kustObjs) < 10 {
		t.Errorf("kustomize rendered %d objects: too few for a comparison that means something", len(kustObjs))
	}
}

func metaLabels(o object) map[string]string {
	return reflect.ValueOf(o.obj).Elem().FieldByName("ObjectMeta").Interface().(metav1.ObjectMeta).Labels
}
