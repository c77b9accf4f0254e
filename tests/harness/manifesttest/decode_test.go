package manifesttest

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestSplitDocuments checks the splitter on the cases the manifests use.
func TestSplitDocuments(t *testing.T) {
	in := []byte("# header\n---\na: 1\n---\n# only a comment\n---   \nb: 2\n---\n")
	got := SplitDocuments(in)
	if len(got) != 2 || !bytes.Contains(got[0], []byte("a: 1")) || !bytes.Contains(got[1], []byte("b: 2")) {
		t.Errorf("SplitDocuments = %q, want the documents holding a: 1 and b: 2", got)
	}
}

// TestDecodeStrict checks that each known kind decodes into its API type and that
// unknown kinds and fields fail.
func TestDecodeStrict(t *testing.T) {
	obj, tm, err := DecodeStrict([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: a}\n"))
	if svc, ok := obj.(*corev1.Service); err != nil || !ok || svc.Name != "a" || tm.Kind != "Service" {
		t.Errorf("Service: %T %+v, %v", obj, tm, err)
	}
	obj, _, err = DecodeStrict([]byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\n"))
	if _, ok := obj.(*rbacv1.Role); err != nil || !ok {
		t.Errorf("Role: %T, %v", obj, err)
	}
	for doc, want := range map[string]string{
		"apiVersion: v1\nkind: Pod\n":                              "unexpected apiVersion",
		"apiVersion: apps/v2\nkind: Deployment\n":                  "unexpected apiVersion",
		"apiVersion: v1\nkind: Service\nspec: {tpye: ClusterIP}\n": "unknown field",
	} {
		if _, _, err := DecodeStrict([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeStrict(%q) = %v, want an error with %q", doc, err, want)
		}
	}
	for key := range collections {
		v, k, _ := strings.Cut(key, " ")
		if _, _, err := DecodeStrict([]byte("apiVersion: " + v + "\nkind: " + k + "\n")); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
}
