package kubetest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/wait"
)

// The cluster authenticates the admin and service-account tokens minted by
// TokenRequest, and RBAC allows a service account exactly what its Role
// grants.
func TestClusterAuthenticatesAndAuthorizes(t *testing.T) {
	c := Start(t)
	src, err := sourceDir()
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var version struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := c.Admin(http.MethodGet, "/version", "", nil, &version); err != nil {
		t.Fatal(err)
	}
	if want := k8sVersionRE.FindSubmatch(gomod); want == nil || version.GitVersion != string(want[1]) {
		t.Errorf("/version says %q, want the version kube/go.mod requires", version.GitVersion)
	}
	t.Logf("kube-apiserver %s", version.GitVersion)

	const ns = "kubetest"
	if err := c.CreateNamespace(ns); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateServiceAccount(ns, "reader"); err != nil {
		t.Fatal(err)
	}
	tok, err := c.Token(ns, "reader", 0)
	if err != nil {
		t.Fatal(err)
	}

	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	err = c.As(tok, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", "",
		map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, &review)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := review.Status.UserInfo.Username, "system:serviceaccount:kubetest:reader"; got != want {
		t.Errorf("the minted token authenticates as %q, want %q", got, want)
	}

	pods := "/api/v1/namespaces/" + ns + "/pods"
	if code := codeOf(c.As(tok, http.MethodGet, pods, "", nil, nil)); code != http.StatusForbidden {
		t.Errorf("list pods without a Role: %d, want 403", code)
	}
	if code := codeOf(c.As("not-a-token", http.MethodGet, pods, "", nil, nil)); code != http.StatusUnauthorized {
		t.Errorf("list pods with a bad token: %d, want 401", code)
	}

	role := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": map[string]any{"name": "reader"},
		"rules": []any{map[string]any{"apiGroups": []string{""}, "resources": []string{"pods"}, "verbs": []string{"list"}}},
	}
	binding := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": map[string]any{"name": "reader"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "reader", "namespace": ns}},
	}
	for path, obj := range map[string]any{"roles": role, "rolebindings": binding} {
		if err := c.Admin(http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/"+path, "", obj, nil); err != nil {
			t.Fatal(err)
		}
	}
	// RBAC takes effect through the API server's informers: wait for it.
	if err := wait.Until(context.Background(), 30*time.Second, 100*time.Millisecond, func() error {
		return c.As(tok, http.MethodGet, pods, "", nil, nil)
	}); err != nil {
		t.Fatalf("list pods with the Role: %v", err)
	}
	if code := codeOf(c.As(tok, http.MethodDelete, pods+"/x", "", nil, nil)); code != http.StatusForbidden {
		t.Errorf("delete a pod with a list-only Role: %d, want 403", code)
	}
	if code := codeOf(c.As(tok, http.MethodGet, "/api/v1/namespaces/default/pods", "", nil, nil)); code != http.StatusForbidden {
		t.Errorf("list pods in another namespace: %d, want 403", code)
	}
}

// codeOf is the status code of an APIError, 0 for nil, -1 for others.
func codeOf(err error) int {
	if err == nil {
		return 0
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return -1
}

// The build lock excludes a second holder until the first lets go.
func TestBuildLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "build.lock")
	unlock, err := lockFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		unlock2, err := lockFile(path, os.Stderr)
		if err != nil {
			t.Error(err)
		} else {
			unlock2()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a second process-wide lock was granted while the first was held")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the second locker did not get the lock after the first let go")
	}
}

// The cache key changes with the module's content.
func TestCacheKeyFollowsTheModule(t *testing.T) {
	src, err := sourceDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range sourceFiles() {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k1, err := cacheKey(dir, goTool())
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := cacheKey(src, goTool())
	if k1 != k2 {
		t.Errorf("the same files give keys %s and %s", k1, k2)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubelet", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if k3, _ := cacheKey(dir, goTool()); k3 == k1 {
		t.Errorf("a changed kubelet/main.go keeps the key %s", k1)
	}
}
