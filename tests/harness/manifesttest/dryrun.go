package manifesttest

import (
	"errors"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/electd/electd/tests/harness/kubetest"
)

// collections maps apiVersion and kind to the collection's path in a
// namespace (%s), for every kind the shipped manifests may hold.
var collections = map[string]string{
	"apps/v1 Deployment":                       "/apis/apps/v1/namespaces/%s/deployments",
	"apps/v1 StatefulSet":                      "/apis/apps/v1/namespaces/%s/statefulsets",
	"v1 Service":                               "/api/v1/namespaces/%s/services",
	"v1 ConfigMap":                             "/api/v1/namespaces/%s/configmaps",
	"v1 Secret":                                "/api/v1/namespaces/%s/secrets",
	"v1 ServiceAccount":                        "/api/v1/namespaces/%s/serviceaccounts",
	"policy/v1 PodDisruptionBudget":            "/apis/policy/v1/namespaces/%s/poddisruptionbudgets",
	"rbac.authorization.k8s.io/v1 Role":        "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles",
	"rbac.authorization.k8s.io/v1 RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
	"networking.k8s.io/v1 NetworkPolicy":       "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies",
}

// DryRunApply applies one YAML object to namespace ns with server-side
// apply, dryRun=All and strict field validation (as kubectl apply
// --server-side --dry-run=server does): the API server decodes, defaults,
// validates and admits it, and must store nothing.
func DryRunApply(c *kubetest.Cluster, ns string, doc []byte) (metav1.TypeMeta, string, error) {
	var obj struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		return obj.TypeMeta, "", err
	}
	name := obj.Metadata.Name
	tmpl, ok := collections[obj.APIVersion+" "+obj.Kind]
	if !ok {
		return obj.TypeMeta, name, errors.New("no resource path for " + obj.APIVersion + " " + obj.Kind)
	}
	collection := strings.ReplaceAll(tmpl, "%s", ns)
	var got metav1.PartialObjectMetadata
	if err := c.Admin(http.MethodPatch, kubetest.ApplyPath(collection, name, true), "application/apply-patch+yaml", doc, &got); err != nil {
		return obj.TypeMeta, name, err
	}
	if got.Name != name || got.Namespace != ns || got.Kind != obj.Kind {
		return obj.TypeMeta, name, errors.New("the answer names " + got.Kind + " " + got.Namespace + "/" + got.Name)
	}
	if err := c.Admin(http.MethodGet, collection+"/"+name, "", nil, nil); err == nil {
		return obj.TypeMeta, name, errors.New("stored by a dry run")
	}
	return obj.TypeMeta, name, nil
}
