package k8s

import (
	"slices"
	"testing"

	"github.com/electd/electd/tests/harness/manifesttest"
)

// labelOverlay is the label flavour: a kustomize overlay of this directory.
// It cannot live below it: kustomize refuses an overlay inside its base's
// directory ("cycle detected").
const labelOverlay = "../k8s-label"

// proxyOverlay is the proxy flavour, an overlay of this directory too.
const proxyOverlay = "../k8s-proxy"

// kustomizeBuild renders a kustomization directory (tests/harness/manifesttest).
var kustomizeBuild = manifesttest.Kustomize

// render decodes every object of a rendered kustomization strictly, as
// load does for the files.
func render(t *testing.T, dir string) *manifests {
	t.Helper()
	out, err := kustomizeBuild(dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	m := &manifests{files: map[string][]object{}}
	seen := map[string]string{}
	for i, doc := range splitDocuments(out) {
		obj, tm, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("kustomize %s, object %d: %v\n%s", dir, i+1, err, doc)
		}
		m.add(t, obj, tm, dir, i, seen)
	}
	return m
}

// flavour is one way to deploy: its name and its objects.
type flavour struct {
	name string
	m    *manifests
}

// flavours are the readiness-gated base (its files) and the label and
// proxy overlays (rendered).
func flavours(t *testing.T) []flavour {
	t.Helper()
	return []flavour{{"gated", load(t)}, {"label", render(t, labelOverlay)}, {"proxy", render(t, proxyOverlay)}}
}

// forEachFlavour runs check on every flavour, as a subtest each.
func forEachFlavour(t *testing.T, check func(t *testing.T, m *manifests)) {
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) { check(t, f.m) })
	}
}

func kinds(m *manifests) []string {
	var ks []string
	for _, objs := range m.files {
		for _, o := range objs {
			ks = append(ks, o.kind+"/"+o.name)
		}
	}
	slices.Sort(ks)
	return ks
}

// The base renders to exactly its files' objects, the label overlay to those
// plus its ServiceAccount, Role and RoleBinding, and the proxy overlay to
// the base's objects alone (it patches them, adds no API access): every
// object of all three decodes strictly.
func TestFlavoursRenderStrictly(t *testing.T) {
	files := kinds(load(t))
	if got := kinds(render(t, ".")); !slices.Equal(got, files) {
		t.Errorf("kustomize . renders %v, the files hold %v", got, files)
	}
	want := append(slices.Clone(files), "Role/app-electd", "RoleBinding/app-electd", "ServiceAccount/app-electd")
	slices.Sort(want)
	if got := kinds(render(t, labelOverlay)); !slices.Equal(got, want) {
		t.Errorf("kustomize %s renders %v, want %v", labelOverlay, got, want)
	}
	if got := kinds(render(t, proxyOverlay)); !slices.Equal(got, files) {
		t.Errorf("kustomize %s renders %v, want the base's %v", proxyOverlay, got, files)
	}
}
