package k8s

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/electd/electd/tests/harness/manifesttest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// manifests is every object of every manifest file in this directory.
type manifests struct {
	files        map[string][]object // file name -> its objects, in order
	deployments  []*appsv1.Deployment
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	configMaps   []*corev1.ConfigMap
	secrets      []*corev1.Secret
	pdbs         []*policyv1.PodDisruptionBudget
	accounts     []*corev1.ServiceAccount
	roles        []*rbacv1.Role
	bindings     []*rbacv1.RoleBinding
	policies     []*networkingv1.NetworkPolicy
}

type object struct {
	file       string
	apiVersion string
	kind       string
	name       string
}

func (o object) String() string { return fmt.Sprintf("%s: %s %s", o.file, o.kind, o.name) }

// workload is a Deployment or StatefulSet seen through what the checks need.
type workload struct {
	ref      string // "Deployment app"
	replicas int32
	selector *metav1.LabelSelector
	template *corev1.PodTemplateSpec
}

func (m *manifests) workloads() []workload {
	var ws []workload
	for _, d := range m.deployments {
		ws = append(ws, workload{"Deployment " + d.Name, replicas(d.Spec.Replicas), d.Spec.Selector, &d.Spec.Template})
	}
	for _, s := range m.statefulSets {
		ws = append(ws, workload{"StatefulSet " + s.Name, replicas(s.Spec.Replicas), s.Spec.Selector, &s.Spec.Template})
	}
	return ws
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1 // the API's default
	}
	return *p
}

const kustomizationFile = "kustomization.yaml"

// manifestFiles lists the *.yaml and *.yml files here, kustomization.yaml aside.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || name == kustomizationFile {
			continue
		}
		if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
			files = append(files, name)
		}
	}
	if len(files) == 0 {
		t.Fatal("no manifests found")
	}
	return files
}

// The decoding helpers are tests/harness/manifesttest's, shared with the Helm
// chart's tests.
var (
	splitDocuments  = manifesttest.SplitDocuments
	unmarshalStrict = manifesttest.UnmarshalStrict
	decodeStrict    = manifesttest.DecodeStrict
)

// load decodes every manifest; any error fails the test at once, since
// every other check depends on it.
func load(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{files: map[string][]object{}}
	seen := map[string]string{}
	for _, f := range manifestFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs := splitDocuments(data)
		if len(docs) == 0 {
			t.Fatalf("%s: no documents", f)
		}
		for i, doc := range docs {
			obj, tm, err := decodeStrict(doc)
			if err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			m.add(t, obj, tm, f, i, seen)
		}
	}
	return m
}

// add files one decoded object under its kind; i is its document number
// in file, seen maps kind/name to the file that defined it first.
func (m *manifests) add(t *testing.T, obj any, tm metav1.TypeMeta, f string, i int, seen map[string]string) {
	t.Helper()
	var meta *metav1.ObjectMeta
	switch o := obj.(type) {
	case *appsv1.Deployment:
		m.deployments, meta = append(m.deployments, o), &o.ObjectMeta
	case *appsv1.StatefulSet:
		m.statefulSets, meta = append(m.statefulSets, o), &o.ObjectMeta
	case *corev1.Service:
		m.services, meta = append(m.services, o), &o.ObjectMeta
	case *corev1.ConfigMap:
		m.configMaps, meta = append(m.configMaps, o), &o.ObjectMeta
	case *corev1.Secret:
		m.secrets, meta = append(m.secrets, o), &o.ObjectMeta
	case *policyv1.PodDisruptionBudget:
		m.pdbs, meta = append(m.pdbs, o), &o.ObjectMeta
	case *corev1.ServiceAccount:
		m.accounts, meta = append(m.accounts, o), &o.ObjectMeta
	case *rbacv1.Role:
		m.roles, meta = append(m.roles, o), &o.ObjectMeta
	case *rbacv1.RoleBinding:
		m.bindings, meta = append(m.bindings, o), &o.ObjectMeta
	case *networkingv1.NetworkPolicy:
		m.policies, meta = append(m.policies, o), &o.ObjectMeta
	}
	if meta.Name == "" {
		t.Fatalf("%s, document %d: %s without metadata.name", f, i+1, tm.Kind)
	}
	if meta.Namespace != "" {
		t.Errorf("%s: %s %s sets a namespace; leave it to kubectl -n or kustomize", f, tm.Kind, meta.Name)
	}
	key := tm.Kind + "/" + meta.Name
	if prev, dup := seen[key]; dup {
		t.Errorf("%s: %s defined again (first in %s)", f, key, prev)
	}
	seen[key] = f
	m.files[f] = append(m.files[f], object{f, tm.APIVersion, tm.Kind, meta.Name})
}

func TestManifestsDecodeStrictly(t *testing.T) {
	m := load(t)
	want := map[string][]string{
		"zookeeper.yaml":     {"ConfigMap", "NetworkPolicy", "PodDisruptionBudget", "Service", "StatefulSet"},
		"app.yaml":           {"Deployment"},
		"service.yaml":       {"Service"},
		"pdb.yaml":           {"PodDisruptionBudget"},
		"networkpolicy.yaml": {"NetworkPolicy"},
	}
	for f, objs := range m.files {
		var kinds []string
		for _, o := range objs {
			t.Logf("%v", o)
			if !slices.Contains(kinds, o.kind) {
				kinds = append(kinds, o.kind)
			}
		}
		slices.Sort(kinds)
		w, ok := want[f]
		if !ok {
			t.Errorf("%s: a manifest this test does not know; add it to the table of expected kinds", f)
			continue
		}
		if !slices.Equal(kinds, w) {
			t.Errorf("%s holds kinds %v, want %v", f, kinds, w)
		}
	}
	for f := range want {
		if _, ok := m.files[f]; !ok {
			t.Errorf("%s is missing", f)
		}
	}
}

// TestStrictDecodingRejectsUnknownFields shows that the decoder the other
// tests rely on fails on a misspelt field instead of dropping it.
func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	for name, doc := range map[string]string{
		"misspelt field": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 3\n",
		"duplicate key":  "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nmetadata: {name: y}\n",
		"unknown kind":   "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
		"sidecar typo": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n" +
			"    spec:\n      initContainers:\n        - name: electd\n          restartpolicy: Always\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := decodeStrict([]byte(doc)); err == nil {
				t.Errorf("decoded without error:\n%s", doc)
			}
		})
	}
}

// kustomization is the part of kustomize's Kustomization this directory uses;
// decoded strictly, so a field added to kustomization.yaml must be added here.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images,omitempty"`
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	data, err := os.ReadFile(kustomizationFile)
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := unmarshalStrict(data, &k); err != nil {
		t.Fatalf("%s: %v", kustomizationFile, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("%s: apiVersion %q kind %q", kustomizationFile, k.APIVersion, k.Kind)
	}
	files := manifestFiles(t)
	listed := map[string]bool{}
	for _, r := range k.Resources {
		if listed[r] {
			t.Errorf("%s lists %s twice", kustomizationFile, r)
		}
		listed[r] = true
		if !slices.Contains(files, filepath.Clean(r)) {
			t.Errorf("%s lists %s, which is not a manifest in this directory", kustomizationFile, r)
		}
	}
	for _, f := range files {
		if !listed[f] {
			t.Errorf("%s does not list %s", kustomizationFile, f)
		}
	}
	m := load(t)
	for _, img := range k.Images {
		used := false
		for _, w := range m.workloads() {
			for _, c := range allContainers(&w.template.Spec) {
				used = used || imageName(c.Image) == img.Name
			}
		}
		if !used {
			t.Errorf("%s: images entry %q matches no container image", kustomizationFile, img.Name)
		}
	}
}

// imageName strips the tag or digest from an image reference.
func imageName(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

func allContainers(spec *corev1.PodSpec) []*corev1.Container {
	var cs []*corev1.Container
	for i := range spec.InitContainers {
		cs = append(cs, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		cs = append(cs, &spec.Containers[i])
	}
	return cs
}
