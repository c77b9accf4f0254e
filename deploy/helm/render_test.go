package helm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/electd/electd/deploy/k8s"
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
	for i, doc := range k8s.SplitDocuments(data) {
		obj, tm, err := k8s.DecodeStrict(doc)
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

// kustomizeObjects decodes the manifests deploy/k8s/kustomization.yaml
// lists, with its image settings applied.
func kustomizeObjects(t *testing.T) []object {
	t.Helper()
	dir := filepath.Join(repoRoot, "deploy/k8s")
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kust struct {
		Resources []string `json:"resources"`
		Images    []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
			Digest  string `json:"digest"`
		} `json:"images"`
	}
	if err := yaml.Unmarshal(b, &kust); err != nil {
		t.Fatal(err)
	}
	var objs []object
	for _, r := range kust.Resources {
		data, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decodeAll(t, "deploy/k8s/"+r, data)...)
	}
	for _, img := range kust.Images {
		for _, o := range objs {
			for _, c := range containers(o) {
				name, _, _ := strings.Cut(strings.Split(c.Image, "@")[0], ":")
				if name != img.Name {
					continue
				}
				ref := name
				if img.NewName != "" {
					ref = img.NewName
				}
				switch {
				case img.Digest != "":
					ref += "@" + img.Digest
				case img.NewTag != "":
					ref += ":" + img.NewTag
				default:
					ref = c.Image
				}
				c.Image = ref
			}
		}
	}
	return objs
}

// containers are the init and regular containers of a workload.
func containers(o object) []*corev1.Container {
	var spec *corev1.PodSpec
	switch w := o.obj.(type) {
	case *appsv1.Deployment:
		spec = &w.Spec.Template.Spec
	case *appsv1.StatefulSet:
		spec = &w.Spec.Template.Spec
	default:
		return nil
	}
	var cs []*corev1.Container
	for i := range spec.InitContainers {
		cs = append(cs, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		cs = append(cs, &spec.Containers[i])
	}
	return cs
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

// With the names deploy/k8s uses, the chart's defaults render the same
// objects, field for field, as the kustomize manifests: the same probes,
// rollout strategy, budget, security contexts, resources and environment.
// Only Helm's labels and the admin token's value differ.
func TestChartDefaultsAreTheKustomizeManifests(t *testing.T) {
	chartObjs := decodeAll(t, "helm template", render(t,
		"--set", "zookeeper.name=zookeeper", "--set", "electd.adminToken.secretName=electd-admin"))
	kustObjs := kustomizeObjects(t)

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
		if s, ok := c.obj.(*corev1.Secret); ok {
			// The chart's token is random; deploy/k8s's a placeholder.
			tok := s.StringData["token"]
			if len(tok) < 32 {
				t.Errorf("Secret %s: token %q, want a random one of at least 32 characters", s.Name, tok)
			}
			s.StringData["token"] = k.obj.(*corev1.Secret).StringData["token"]
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
			t.Errorf("the chart renders %s, which deploy/k8s does not have", key)
		}
	}
}

func metaLabels(o object) map[string]string {
	return reflect.ValueOf(o.obj).Elem().FieldByName("ObjectMeta").Interface().(metav1.ObjectMeta).Labels
}
