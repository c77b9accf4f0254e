package k8s

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/electd/electd/internal/kubetest"
)

// resources maps apiVersion and kind to the collection's path in a
// namespace, for every kind the manifests hold.
var resources = map[string]string{
	"apps/v1 Deployment":                       "/apis/apps/v1/namespaces/%s/deployments",
	"apps/v1 StatefulSet":                      "/apis/apps/v1/namespaces/%s/statefulsets",
	"v1 Service":                               "/api/v1/namespaces/%s/services",
	"v1 ConfigMap":                             "/api/v1/namespaces/%s/configmaps",
	"v1 Secret":                                "/api/v1/namespaces/%s/secrets",
	"v1 ServiceAccount":                        "/api/v1/namespaces/%s/serviceaccounts",
	"policy/v1 PodDisruptionBudget":            "/apis/policy/v1/namespaces/%s/poddisruptionbudgets",
	"rbac.authorization.k8s.io/v1 Role":        "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles",
	"rbac.authorization.k8s.io/v1 RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
}

// dryRunApply applies one YAML object with server-side apply, dryRun=All
// and strict field validation: the API server decodes, defaults,
// validates and admits it, and stores nothing.
func dryRunApply(c *kubetest.Cluster, ns string, doc []byte) (metav1.TypeMeta, string, error) {
	var obj struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		return obj.TypeMeta, "", err
	}
	tmpl, ok := resources[obj.APIVersion+" "+obj.Kind]
	if !ok {
		return obj.TypeMeta, obj.Metadata.Name, errors.New("no resource path for " + obj.APIVersion + " " + obj.Kind)
	}
	path := kubetest.ApplyPath(strings.ReplaceAll(tmpl, "%s", ns), obj.Metadata.Name, true)
	var got metav1.PartialObjectMetadata
	if err := c.Admin(http.MethodPatch, path, "application/apply-patch+yaml", doc, &got); err != nil {
		return obj.TypeMeta, obj.Metadata.Name, err
	}
	if got.Name != obj.Metadata.Name || got.Namespace != ns || got.Kind != obj.Kind {
		return obj.TypeMeta, obj.Metadata.Name, errors.New("the answer names " + got.Kind + " " + got.Namespace + "/" + got.Name)
	}
	// Dry run: nothing was stored.
	if err := c.Admin(http.MethodGet, strings.ReplaceAll(tmpl, "%s", ns)+"/"+obj.Metadata.Name, "", nil, nil); err == nil {
		return obj.TypeMeta, obj.Metadata.Name, errors.New("stored by a dry run")
	}
	return obj.TypeMeta, obj.Metadata.Name, nil
}

// Every object of both flavours, rendered by kustomize, is accepted by a
// real kube-apiserver's server-side dry run (as kubectl apply
// --dry-run=server --server-side does), and a broken one is refused, so
// the check can fail.
func TestManifestsPassServerSideDryRun(t *testing.T) {
	c := kubetest.Start(t)
	for _, f := range []struct{ name, dir string }{{"gated", "."}, {"label", labelOverlay}} {
		t.Run(f.name, func(t *testing.T) {
			ns := "dryrun-" + f.name
			if err := c.CreateNamespace(ns); err != nil {
				t.Fatal(err)
			}
			out, err := kustomizeBuild(f.dir)
			if err != nil {
				t.Fatal(err)
			}
			docs := splitDocuments(out)
			if len(docs) < 5 {
				t.Fatalf("kustomize %s rendered %d objects", f.dir, len(docs))
			}
			for _, doc := range docs {
				tm, name, err := dryRunApply(c, ns, doc)
				if err != nil {
					t.Errorf("%s %s: %v", tm.Kind, name, err)
					continue
				}
				t.Logf("%s %s: accepted by the API server (dry run)", tm.Kind, name)
			}
		})
	}

	if err := c.CreateNamespace("dryrun-broken"); err != nil {
		t.Fatal(err)
	}
	for what, doc := range map[string]string{
		"misspelt field": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: misspelt}\nspec:\n  replica: 3\n" +
			"  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n" +
			"    spec: {containers: [{name: c, image: i}]}\n",
		"selector not matching the template": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: nomatch}\nspec:\n" +
			"  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: c}}\n" +
			"    spec: {containers: [{name: c, image: i}]}\n",
		"bad label value": "apiVersion: v1\nkind: Service\nmetadata: {name: badlabel}\nspec:\n" +
			"  selector: {electd.io/leader: \"not true!\"}\n  ports: [{port: 80}]\n",
	} {
		if _, _, err := dryRunApply(c, "dryrun-broken", []byte(doc)); err == nil {
			t.Errorf("%s: accepted by the dry run", what)
		} else {
			t.Logf("%s: refused: %v", what, err)
		}
	}
}
