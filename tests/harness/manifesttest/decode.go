// Package manifesttest is what the tests of the shipped manifests and
// chart share: strict decoding of rendered objects into the Kubernetes API
// types, kustomize (the library kubectl embeds) and server-side dry runs
// against a real kube-apiserver (tests/harness/kubetest). deploy/k8s's tests and
// tests/manifests use it.
package manifesttest

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// SplitDocuments splits a multi-document YAML stream, dropping documents
// that hold only comments or blank lines.
func SplitDocuments(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range docSeparator.Split(string(data), -1) {
		empty := true
		for _, line := range strings.Split(d, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				empty = false
				break
			}
		}
		if !empty {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

// UnmarshalStrict decodes YAML the way the API server's strict field
// validation does: field names match case-sensitively (encoding/json alone
// would accept "restartpolicy"), and unknown or duplicate fields are errors.
func UnmarshalStrict(doc []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(js, v)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// scheme makes the Go type of each kind in collections.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	add := runtime.NewSchemeBuilder(appsv1.AddToScheme, corev1.AddToScheme, networkingv1.AddToScheme,
		policyv1.AddToScheme, rbacv1.AddToScheme)
	if err := add.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// DecodeStrict decodes one document into the API type its apiVersion and
// kind name, one of collections', rejecting unknown and duplicate fields.
func DecodeStrict(doc []byte) (any, metav1.TypeMeta, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, tm, err
	}
	if _, ok := collections[tm.APIVersion+" "+tm.Kind]; !ok {
		return nil, tm, fmt.Errorf("unexpected apiVersion %q kind %q", tm.APIVersion, tm.Kind)
	}
	obj, err := scheme.New(tm.GroupVersionKind())
	if err != nil {
		return nil, tm, err
	}
	if err := UnmarshalStrict(doc, obj); err != nil {
		return nil, tm, err
	}
	return obj, tm, nil
}
