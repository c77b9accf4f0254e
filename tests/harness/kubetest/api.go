package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Do sends one request to the API server with a bearer token (the admin's
// or a service account's) and returns the status code and body.
func (c *Cluster) Do(ctx context.Context, token, method, path, contentType string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	return Send(c.client, req, token, contentType, 16<<20)
}

// Send sends req to an API server with client, with a bearer token and a
// Content-Type unless empty, and returns the status code and up to limit
// bytes of the body.
func Send(client *http.Client, req *http.Request, token, contentType string, limit int64) (int, []byte, error) {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	return resp.StatusCode, b, err
}

// Admin sends a request as the admin, with body marshalled to JSON unless
// it is already []byte, and decodes a 2xx answer into out (if not nil). A
// non-2xx answer is an error holding the API server's message.
func (c *Cluster) Admin(method, path, contentType string, body, out any) error {
	return c.As(c.AdminToken, method, path, contentType, body, out)
}

// As is Admin with another bearer token.
func (c *Cluster) As(token, method, path, contentType string, body, out any) error {
	var b []byte
	switch v := body.(type) {
	case nil:
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return err
		}
	}
	if b != nil && contentType == "" {
		contentType = "application/json"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, resp, err := c.Do(ctx, token, method, path, contentType, b)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if code < 200 || code > 299 {
		return &APIError{Code: code, Method: method, Path: path, Body: string(resp)}
	}
	if out != nil {
		if err := json.Unmarshal(resp, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return nil
}

// APIError is a non-2xx answer.
type APIError struct {
	Code         int
	Method, Path string
	Body         string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Code, tail(e.Body, 600))
}

// CreateNamespace creates a namespace.
func (c *Cluster) CreateNamespace(name string) error {
	return c.Admin(http.MethodPost, "/api/v1/namespaces", "", map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}, nil)
}

// CreateServiceAccount creates a ServiceAccount (no controller makes
// "default" here: pods that name a ServiceAccount need it to exist).
func (c *Cluster) CreateServiceAccount(ns, name string) error {
	return c.Admin(http.MethodPost, "/api/v1/namespaces/"+ns+"/serviceaccounts", "", map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": name},
	}, nil)
}

// Token mints a token of a ServiceAccount with the TokenRequest API, as
// `kubectl create token` does. ttl is at least 10 minutes (the API's floor).
func (c *Cluster) Token(ns, serviceAccount string, ttl time.Duration) (string, error) {
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	err := c.Admin(http.MethodPost, "/api/v1/namespaces/"+ns+"/serviceaccounts/"+serviceAccount+"/token", "",
		map[string]any{
			"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
			"spec": map[string]any{"expirationSeconds": int64(max(ttl, 10*time.Minute).Seconds())},
		}, &tr)
	if err != nil {
		return "", err
	}
	if tr.Status.Token == "" {
		return "", fmt.Errorf("kubetest: TokenRequest for %s/%s returned no token", ns, serviceAccount)
	}
	return tr.Status.Token, nil
}

// ApplyPath is the path of a server-side apply PATCH of the named object
// (as `kubectl apply --server-side`), with strict field validation (an
// unknown or duplicate field is an error, as kubectl asks by default) and,
// when dryRun, ?dryRun=All: validated and admitted, then not stored.
func ApplyPath(apiPath, name string, dryRun bool) string {
	q := url.Values{"fieldManager": {"electd-test"}, "force": {"true"}, "fieldValidation": {"Strict"}}
	if dryRun {
		q.Set("dryRun", "All")
	}
	return apiPath + "/" + url.PathEscape(name) + "?" + q.Encode()
}

// Kubeconfig writes a kubeconfig for token into the cluster's directory
// and returns its path, for running kubectl against the cluster by hand.
func (c *Cluster) Kubeconfig(name, token, namespace string) (string, error) {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: kubetest
  context:
    cluster: kubetest
    user: %s
    namespace: %s
current-context: kubetest
`, c.URL, c.CAFile, name, token, name, namespace)
	p := filepath.Join(c.Dir, "kubeconfig-"+name)
	return p, os.WriteFile(p, []byte(cfg), 0o600)
}
