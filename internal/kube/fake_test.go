package kube

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeAPI is an in-memory API server for the unit tests: pods (labels
// only) and Leases of one namespace, bearer-token checks, and failures on
// demand. The real API server is exercised by tests/kube.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu    sync.Mutex
	token string
	pods  map[string]map[string]string // name -> labels
	lease map[string]any               // the one Lease's JSON, nil if none
	rv    int
	calls []string                      // "PATCH pod/a {labels}" etc.
	fail  func(method, path string) int // non-zero: answer this code
	block chan struct{}                 // non-nil: pod PATCHes wait for it
}

func newFakeAPI(t *testing.T, pods ...string) *fakeAPI {
	f := &fakeAPI{t: t, token: "good", pods: map[string]map[string]string{}}
	for _, p := range pods {
		f.pods[p] = map[string]string{"app": "x"}
	}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "status": "Failure", "reason": reason, "message": msg, "code": code})
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		f.mu.Unlock()
		f.status(w, 401, "Unauthorized", "Unauthorized")
		return
	}
	if f.fail != nil {
		if code := f.fail(r.Method, r.URL.Path); code != 0 {
			f.mu.Unlock()
			f.status(w, code, "InternalError", "injected failure")
			return
		}
	}
	block := f.block
	f.mu.Unlock()
	const podsPrefix = "/api/v1/namespaces/ns/pods"
	const leasePath = "/apis/coordination.k8s.io/v1/namespaces/ns/leases"
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == http.MethodGet && r.URL.Path == podsPrefix:
		f.listPods(w, r)
	case r.Method == http.MethodPatch && strings.HasPrefix(r.URL.Path, podsPrefix+"/"):
		if block != nil {
			select {
			case <-block:
			case <-r.Context().Done():
				return
			}
		}
		f.patchPod(w, strings.TrimPrefix(r.URL.Path, podsPrefix+"/"), r.Header.Get("Content-Type"), body)
	case strings.HasPrefix(r.URL.Path, leasePath):
		f.serveLease(w, r, strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, leasePath), "/"), body)
	default:
		f.status(w, 404, "NotFound", r.Method+" "+r.URL.Path)
	}
}

func (f *fakeAPI) listPods(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("labelSelector")
	if !strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList") {
		f.t.Errorf("pod list without the partial metadata Accept header: %q", r.Header.Get("Accept"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var items []any
	for name, labels := range f.pods {
		if _, ok := labels[key]; ok {
			items = append(items, map[string]any{"metadata": map[string]any{"name": name, "labels": labels}})
		}
	}
	f.calls = append(f.calls, "LIST "+key)
	json.NewEncoder(w).Encode(map[string]any{"kind": "PartialObjectMetadataList", "items": items})
}

func (f *fakeAPI) patchPod(w http.ResponseWriter, name, ctype string, body []byte) {
	if ctype != "application/merge-patch+json" {
		f.status(w, 415, "UnsupportedMediaType", ctype)
		return
	}
	var p struct {
		Metadata struct {
			Labels map[string]*string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		f.status(w, 400, "BadRequest", err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	labels, ok := f.pods[name]
	if !ok {
		f.status(w, 404, "NotFound", "pods \""+name+"\" not found")
		return
	}
	for k, v := range p.Metadata.Labels {
		if v == nil {
			delete(labels, k)
			f.calls = append(f.calls, "UNLABEL "+name)
		} else {
			labels[k] = *v
			f.calls = append(f.calls, "LABEL "+name+"="+*v)
		}
	}
	json.NewEncoder(w).Encode(map[string]any{"metadata": map[string]any{"name": name, "labels": labels}})
}

func (f *fakeAPI) serveLease(w http.ResponseWriter, r *http.Request, name string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		if f.lease == nil || name != "lease" {
			f.status(w, 404, "NotFound", "leases \""+name+"\" not found")
			return
		}
		json.NewEncoder(w).Encode(f.lease)
	case http.MethodPost:
		if f.lease != nil {
			f.status(w, 409, "AlreadyExists", "exists")
			return
		}
		var l map[string]any
		json.Unmarshal(body, &l)
		f.rv++
		l["metadata"].(map[string]any)["resourceVersion"] = strconv.Itoa(f.rv)
		f.lease = l
		f.calls = append(f.calls, "CREATE lease")
		json.NewEncoder(w).Encode(l)
	case http.MethodPatch:
		var p map[string]any
		json.Unmarshal(body, &p)
		if f.lease == nil {
			f.status(w, 404, "NotFound", "no lease")
			return
		}
		meta := f.lease["metadata"].(map[string]any)
		if rv := p["metadata"].(map[string]any)["resourceVersion"]; rv != meta["resourceVersion"] {
			f.status(w, 409, "Conflict", "the object has been modified")
			return
		}
		spec := f.lease["spec"].(map[string]any)
		for k, v := range p["spec"].(map[string]any) {
			if v == nil {
				delete(spec, k)
			} else {
				spec[k] = v
			}
		}
		f.rv++
		meta["resourceVersion"] = strconv.Itoa(f.rv)
		f.calls = append(f.calls, "PATCH lease")
		json.NewEncoder(w).Encode(f.lease)
	default:
		f.status(w, 405, "MethodNotAllowed", r.Method)
	}
}

func (f *fakeAPI) labels(pod string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, v := range f.pods[pod] {
		out[k] = v
	}
	return out
}

func (f *fakeAPI) setLabel(pod, k, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods[pod][k] = v
}

func (f *fakeAPI) leaseSpec() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range f.lease["spec"].(map[string]any) {
		out[k] = v
	}
	return out
}

func (f *fakeAPI) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeAPI) set(fn func(f *fakeAPI)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// countRecorder counts KubeCallFailed by operation.
type countRecorder struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *countRecorder) KubeCallFailed(op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[op]++
}

func (r *countRecorder) get(op string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[op]
}

// writeToken writes a token file and returns its path.
func writeToken(t *testing.T, dir, tok string) string {
	t.Helper()
	p := filepath.Join(dir, "token")
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
