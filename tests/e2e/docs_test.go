//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/electd/electd/tests/harness/manifesttest"
	"github.com/electd/electd/tests/harness/nodetest"
	"github.com/electd/electd/tests/harness/wait"
)

// docStepTimeout bounds one command of the docs: a `kubectl wait` of
// theirs for a whole ensemble and app to start is the longest.
const docStepTimeout = 6 * time.Minute

// testDocs runs every command of the docs marked for the node ("sh node",
// docsteps.go), file by file in document order, as a reader would on a
// cluster of their own: in one shell per file (and session), from a copy of the
// repository's deploy/ directory, with kubectl and Helm of the node's
// release and a kubeconfig whose default namespace is the file's own
// (shown as "default" in what the commands print). What a command prints
// is compared with the output the docs show (CompareOutput); a command
// that fails, or prints something else, fails the test.
//
// The node stands in for what a reader's machine and cluster have and the
// test machines lack, and nothing else: a Docker engine (`make docker` and
// `kind load docker-image REF` give the image nodetest built from the
// Dockerfile's recipe the name REF in the node's containerd), a registry
// (the example app's image is the node's podapp under the manifests' own
// reference) and a default StorageClass (ProvisionClaims).
func testDocs(t *testing.T, n *nodetest.Node, moduleDir string, rep *Report) {
	files, err := docFiles(moduleDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no block of the docs is marked for the node (sh node)")
	}
	helm, err := manifesttest.HelmBinary(moduleDir, t.Logf)
	if err != nil {
		t.Fatalf("building Helm from tools/helm: %v", err)
	}
	app, err := exampleAppImage(moduleDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.TagImage(nodetest.AppImage, app); err != nil {
		t.Fatal(err)
	}
	var ran []string
	for i, f := range files {
		b, err := os.ReadFile(filepath.Join(moduleDir, f))
		if err != nil {
			t.Fatal(err)
		}
		steps, err := NodeSteps(f, string(b))
		if err != nil {
			t.Fatal(err)
		}
		for j, session := range Sessions(steps) {
			name := strings.ReplaceAll(f, "/", "_")
			if s := session[0].Session; s != "" {
				name += "_" + s
			}
			t.Run(name, func(t *testing.T) {
				ran = append(ran, runDocSession(t, n, moduleDir, session, fmt.Sprintf("docs-%d-%d", i+1, j+1), helm)...)
			})
		}
	}
	rep.After("### The docs' commands on the node\n\nEvery block of the docs marked `sh node`, run in document order, one shell per file (`tests/e2e/docs_test.go`); each line: where, the command's first line, its exit status, and whether what it printed is what the docs show.\n```text\n" + strings.Join(ran, "\n") + "\n```")
}

// docFiles are the Markdown files of the repository with a block marked
// for the node, relative to moduleDir.
func docFiles(moduleDir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(moduleDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(moduleDir, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || rel == "bin" || rel == "third_party" || rel == filepath.Join("docs", "bench")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		steps, err := NodeSteps(rel, string(b))
		if err != nil {
			return err
		}
		if len(steps) > 0 {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// exampleAppImage is the app container's image in deploy/k8s/app.yaml.
func exampleAppImage(moduleDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(moduleDir, "deploy", "k8s", "app.yaml"))
	if err != nil {
		return "", err
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(b, &d); err != nil {
		return "", err
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "app" {
			return fullReference(c.Image), nil
		}
	}
	return "", fmt.Errorf("deploy/k8s/app.yaml: no container named app")
}

// fullReference is an image reference as the container runtime resolves
// it: electd:dev is docker.io/library/electd:dev.
func fullReference(ref string) string {
	first, _, ok := strings.Cut(ref, "/")
	switch {
	case !ok:
		return "docker.io/library/" + ref
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		return "docker.io/" + ref
	}
	return ref
}

// runDocSession runs one session's commands in namespace ns and returns a
// line per command for the report.
func runDocSession(t *testing.T, n *nodetest.Node, moduleDir string, steps []DocStep, ns, helm string) []string {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := n.Kubectl(ctx, "create", "namespace", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := n.Kubectl(context.Background(), "delete", "namespace", ns, "--timeout=3m"); err != nil {
			t.Errorf("deleting the namespace: %v", err)
		} else if err := n.ReleaseVolumes(context.Background(), ns); err != nil {
			t.Error(err)
		}
	})
	if err := wait.Until(ctx, time.Minute, pollEvery, func() error {
		var sa corev1.ServiceAccount
		return n.Get("/api/v1/namespaces/"+ns+"/serviceaccounts/default", &sa)
	}); err != nil {
		t.Fatal(err)
	}
	n.ProvisionClaims(ctx, ns, zooKeeperUser)
	s, err := docShell(t, n, moduleDir, ns, helm)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	asDefault := regexp.MustCompile(`\b` + ns + `\b`)
	var lines []string
	for _, st := range steps {
		out, status, err := s.Run(st.Command, docStepTimeout)
		for i := range out {
			out[i] = asDefault.ReplaceAllString(out[i], "default")
		}
		first, _, _ := strings.Cut(st.Command, "\n")
		where := st.Where()
		if st.Session != "" {
			where += " (session " + st.Session + ")"
		}
		line := fmt.Sprintf("%s `%s`: exit %d", where, first, status)
		switch {
		case err != nil:
			t.Fatalf("%s: `%s`: %v; it printed:\n%s", st.Where(), st.Command, err, strings.Join(out, "\n"))
		case status != 0:
			t.Errorf("%s: `%s` exited %d; it printed:\n%s", st.Where(), st.Command, status, strings.Join(out, "\n"))
		case !st.Compare:
			line += ", output not shown in the docs"
		default:
			if ok, diff := CompareOutput(st.Want, out); !ok {
				t.Errorf("%s: `%s` printed what the docs do not show: %s", st.Where(), st.Command, diff)
				line += ", printed something else than the docs show"
			} else {
				line += ", printed what the docs show"
			}
		}
		t.Log(line)
		lines = append(lines, line)
	}
	return lines
}

// docShell starts the file's shell inside the node's network namespace:
// in a copy of deploy/, with the node's kubectl, Helm and the stand-ins
// for `make docker` and `kind load` first on PATH, a home of its own and
// the admin's kubeconfig with ns as its namespace.
func docShell(t *testing.T, n *nodetest.Node, moduleDir, ns, helm string) (*DocSession, error) {
	dir := t.TempDir()
	home, work, bin := filepath.Join(dir, "home"), filepath.Join(dir, "work"), filepath.Join(dir, "bin")
	for _, d := range []string{home, work, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(moduleDir, "deploy"), work).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copying deploy/: %v: %s", err, out)
	}
	kubeconfig := filepath.Join(home, ".kube", "config")
	cfg, err := n.Kubectl(context.Background(), "config", "view", "--raw")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(kubeconfig), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	if out, err := exec.Command(n.Bins.Kubectl, "--kubeconfig", kubeconfig, "config", "set-context", "--current", "--namespace", ns).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kubectl config set-context: %v: %s", err, out)
	}
	ctr := strings.Join(n.Ctr(), " ")
	for name, script := range map[string]string{
		"make": fmt.Sprintf(makeStandIn, ctr, nodetest.ElectdImage),
		"kind": fmt.Sprintf(kindStandIn, ctr),
		"helm": "#!/usr/bin/bash\nexec " + helm + " \"$@\"\n",
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.Symlink(n.Bins.Kubectl, filepath.Join(bin, "kubectl")); err != nil {
		return nil, err
	}
	cmd := n.Netns.Command("bash", "--noprofile", "--norc")
	cmd.Dir = work
	cmd.Env = []string{
		"PATH=" + bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + home, "KUBECONFIG=" + kubeconfig, "LANG=C.UTF-8", "TERM=dumb",
	}
	return StartDocSession(cmd, dir)
}

// makeStandIn is `make docker` on the node: the image the Makefile's
// target builds with a Docker engine, which the test machines lack, is the
// one nodetest built from the recipe the Dockerfile is rendered from
// (tools/dist/image); it gets the Makefile's name for it (IMAGE, electd:dev
// by default) in the node's containerd, where the engine's images would be.
const makeStandIn = `#!/usr/bin/bash
image=electd:dev
for a in "$@"; do
	case "$a" in
	docker) target=docker ;;
	IMAGE=*) image=${a#IMAGE=} ;;
	*) echo "make: the test node has a stand-in for 'make docker' alone" >&2; exit 2 ;;
	esac
done
[[ $target == docker ]] || { echo "make: the test node has a stand-in for 'make docker' alone" >&2; exit 2; }
case "$image" in */*) ;; *) image=docker.io/library/$image ;; esac
%s images tag --force %s "$image" >/dev/null
`

// kindStandIn is `kind load docker-image REF...` on the node: the image
// must be there, as the engine's image must be for kind (make docker put
// it there); the node's containerd is the cluster's, so loading it is done.
const kindStandIn = `#!/usr/bin/bash
if [[ "$1 $2" != "load docker-image" || $# -lt 3 ]]; then
	echo "kind: the test node has a stand-in for 'kind load docker-image IMAGE' alone" >&2
	exit 2
fi
shift 2
for ref in "$@"; do
	full=$ref
	case "$full" in */*) ;; *) full=docker.io/library/$full ;; esac
	if ! %s images ls -q "name==$full" | grep -q .; then
		echo "ERROR: image: \"$ref\" not present locally" >&2
		exit 1
	fi
done
`
