package kube

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/electd/electd/tests/harness/kubetest"
	"github.com/electd/electd/tests/harness/wait"
)

const (
	overlay     = "../../deploy/k8s-label"
	leaderLabel = "electd.io/leader"
	recheck     = 2 * time.Second // kubernetes.recheck_interval in these tests
)

// kubeEnv is one namespace of the test cluster set up as the label
// flavour's manifests set up a real one: their ServiceAccount, Role and
// RoleBinding applied for real, and pods made from their Deployment's pod
// template (API objects only: there is no kubelet).
type kubeEnv struct {
	c        *kubetest.Cluster
	ns       string
	sa       string
	lease    string
	template map[string]any // spec.template of the overlay's Deployment
}

func setupKube(t *testing.T, c *kubetest.Cluster, ns string) *kubeEnv {
	t.Helper()
	if err := c.CreateNamespace(ns); err != nil {
		t.Fatal(err)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		t.Fatal(err)
	}
	k := &kubeEnv{c: c, ns: ns}
	paths := map[string]string{
		"ServiceAccount": "/api/v1/namespaces/%s/serviceaccounts",
		"Role":           "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles",
		"RoleBinding":    "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
	}
	for _, r := range res.Resources() {
		kind, name := r.GetKind(), r.GetName()
		if kind == "Deployment" && name == "app" {
			k.parseDeployment(t, r.MustYaml())
			continue
		}
		p, ok := paths[kind]
		if !ok {
			continue
		}
		doc := []byte(r.MustYaml())
		if err := c.Admin(http.MethodPatch, kubetest.ApplyPath(fmt.Sprintf(p, ns), name, false), "application/apply-patch+yaml", doc, nil); err != nil {
			t.Fatalf("apply %s %s: %v", kind, name, err)
		}
	}
	if k.template == nil || k.sa == "" || k.lease == "" {
		t.Fatalf("%s: no Deployment app with a serviceAccountName and ELECTD_KUBERNETES_LEASE_NAME", overlay)
	}
	return k
}

func (k *kubeEnv) parseDeployment(t *testing.T, doc string) {
	t.Helper()
	var d struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatal(err)
	}
	k.template = d.Spec.Template
	spec := k.template["spec"].(map[string]any)
	k.sa, _ = spec["serviceAccountName"].(string)
	// electd is one of the native sidecars (init containers); the holder
	// and electd-wait beside it have no environment of their own.
	inits, _ := spec["initContainers"].([]any)
	for _, c := range inits {
		env, _ := c.(map[string]any)["env"].([]any)
		for _, e := range env {
			if e := e.(map[string]any); e["name"] == "ELECTD_KUBERNETES_LEASE_NAME" {
				k.lease, _ = e["value"].(string)
			}
		}
	}
}

// createPod creates a pod from the Deployment's template, named after an
// electd id.
func (k *kubeEnv) createPod(t *testing.T, name string) {
	t.Helper()
	meta := map[string]any{"name": name, "labels": k.template["metadata"].(map[string]any)["labels"]}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": k.template["spec"]}
	if err := k.c.Admin(http.MethodPost, "/api/v1/namespaces/"+k.ns+"/pods", "", pod, nil); err != nil {
		t.Fatal(err)
	}
}

// labelled lists the pods whose leader label is "true", as the Service's
// selector sees them, from one consistent read.
func (k *kubeEnv) labelled() ([]string, error) {
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	q := url.Values{"labelSelector": {leaderLabel + "=true"}}
	if err := k.c.Admin(http.MethodGet, "/api/v1/namespaces/"+k.ns+"/pods?"+q.Encode(), "", nil, &list); err != nil {
		return nil, err
	}
	var names []string
	for _, it := range list.Items {
		names = append(names, it.Metadata.Name)
	}
	slices.Sort(names)
	return names, nil
}

// setLabel writes the leader label on a pod as the admin (a stand-in for
// a former leader's late write).
func (k *kubeEnv) setLabel(t *testing.T, pod string) {
	t.Helper()
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{leaderLabel: "true"}}}
	if err := k.c.Admin(http.MethodPatch, "/api/v1/namespaces/"+k.ns+"/pods/"+pod, "application/merge-patch+json", patch, nil); err != nil {
		t.Fatal(err)
	}
}

type leaseView struct {
	Holder      string
	Transitions int
}

func (k *kubeEnv) leaseNow() (leaseView, error) {
	var l struct {
		Spec struct {
			HolderIdentity   string `json:"holderIdentity"`
			LeaseTransitions int    `json:"leaseTransitions"`
		} `json:"spec"`
	}
	err := k.c.Admin(http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/"+k.ns+"/leases/"+k.lease, "", nil, &l)
	return leaseView{l.Spec.HolderIdentity, l.Spec.LeaseTransitions}, err
}

// tokenFile mints a token of a ServiceAccount (TokenRequest) into a file.
func (k *kubeEnv) tokenFile(t *testing.T, sa string) string {
	t.Helper()
	tok, err := k.c.Token(k.ns, sa, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), sa+".token")
	if err := os.WriteFile(p, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// podEnv is what the kubelet gives electd in pod id (the in-cluster
// variables and the downward API) and the keys every test sets; more adds
// the kubernetes.* keys of the mode under test.
func (k *kubeEnv) podEnv(t *testing.T, zk, path, id, tokenFile string, more ...string) []string {
	u, err := url.Parse(k.c.URL)
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{
		"KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port(),
		"POD_NAME=" + id, "POD_NAMESPACE=" + k.ns,
		"ELECTD_KUBERNETES_TOKEN_FILE=" + tokenFile, "ELECTD_KUBERNETES_CA_FILE=" + k.c.CAFile,
		"ELECTD_ZOOKEEPER_SERVERS=" + zk, "ELECTD_ELECTION_PATH=" + path,
	}, more...)
}

// electdEnv is what the overlay gives electd in pod id: the label, the
// Lease and the recheck interval.
func (k *kubeEnv) electdEnv(t *testing.T, zk, path, id, tokenFile string) []string {
	return k.podEnv(t, zk, path, id, tokenFile,
		"ELECTD_KUBERNETES_LEADER_LABEL="+leaderLabel, "ELECTD_KUBERNETES_LEASE_NAME="+k.lease,
		"ELECTD_KUBERNETES_RECHECK_INTERVAL="+recheck.String(),
		"ELECTD_ZOOKEEPER_SESSION_TIMEOUT=4s")
}

// monitor reads the labelled pods every 50ms and remembers every read that
// found more than one: the design promises none outside a former leader's
// late write.
type monitor struct {
	k    *kubeEnv
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	reads   int
	doubles []string
	errs    int
}

func (k *kubeEnv) watch() *monitor {
	m := &monitor{k: k, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			names, err := k.labelled()
			m.mu.Lock()
			m.reads++
			if err != nil {
				m.errs++
			} else if len(names) > 1 {
				m.doubles = append(m.doubles, time.Now().Format("15:04:05.000")+" "+strings.Join(names, ","))
			}
			m.mu.Unlock()
			select {
			case <-m.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return m
}

// end stops the monitor and fails the test if two pods were ever labelled.
func (m *monitor) end(t *testing.T, what string) {
	t.Helper()
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.doubles) > 0 {
		t.Errorf("%s: %d of %d reads found two labelled pods: %v", what, len(m.doubles), m.reads, m.doubles)
	}
	if m.errs > m.reads/2 {
		t.Errorf("%s: %d of %d reads of the pods failed", what, m.errs, m.reads)
	}
	t.Logf("%s: %d reads of the labelled pods, never two", what, m.reads)
}

// onlyLabelled waits until exactly pod carries the label and the Lease
// names it, and returns how long that took.
func (k *kubeEnv) onlyLabelled(t *testing.T, pod string, timeout time.Duration) time.Duration {
	t.Helper()
	return wait.For(t, timeout, "only "+pod+" labelled and holding the Lease", func() bool {
		names, err := k.labelled()
		if err != nil || !slices.Equal(names, []string{pod}) {
			return false
		}
		l, err := k.leaseNow()
		return err == nil && l.Holder == pod
	})
}
