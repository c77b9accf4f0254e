package kubetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/electd/electd/tests/harness/buildcache"
	"github.com/electd/electd/tests/harness/proctest"
)

// CacheEnv names a directory that replaces the default cache root
// (os.UserCacheDir()/electd/kube).
const CacheEnv = "ELECTD_KUBETEST_CACHE"

// Binaries are the paths of the commands the module in kube/ builds: the
// Kubernetes components and kubectl at the version its go.mod pins, and
// lease-sidecar (static, for a container image: the client-go elector the
// node tests compare electd with).
type Binaries struct {
	APIServer, ControllerManager, Scheduler, Kubelet, Proxy, Kubectl string
	LeaseSidecar                                                     string
}

// hostCommands are built in one `go build` (they share most packages) for
// this machine; staticCommands with CGO_ENABLED=0, to run in a container.
var (
	hostCommands   = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"}
	staticCommands = []string{"lease-sidecar"}
)

func binariesIn(dir string) *Binaries {
	p := func(name string) string { return filepath.Join(dir, name) }
	return &Binaries{
		APIServer: p("kube-apiserver"), ControllerManager: p("kube-controller-manager"),
		Scheduler: p("kube-scheduler"), Kubelet: p("kubelet"), Proxy: p("kube-proxy"),
		Kubectl: p("kubectl"), LeaseSidecar: p("lease-sidecar"),
	}
}

func (b *Binaries) all() []string {
	return []string{b.APIServer, b.ControllerManager, b.Scheduler, b.Kubelet, b.Proxy, b.Kubectl, b.LeaseSidecar}
}

var built struct {
	once sync.Once
	bins *Binaries
	err  error
}

// Build returns the binaries of the module in kube/ beside this file,
// building them first if this machine has none for the module's exact
// content and this Go version. The first build takes minutes (about 20 on
// 2 cores with nothing cached) and 2 GB of memory; afterwards it is a
// lookup. Builds are serialized across processes with a lock file, so test
// binaries started together build once. Logs go to progress (nil: discard).
func Build(progress io.Writer) (*Binaries, error) {
	built.once.Do(func() { built.bins, built.err = buildCached(progress) })
	return built.bins, built.err
}

// APIServer returns the path of the kube-apiserver binary (see Build).
func APIServer(progress io.Writer) (string, error) {
	b, err := Build(progress)
	if err != nil {
		return "", err
	}
	return b.APIServer, nil
}

// CacheRoot is where built binaries live: $ELECTD_KUBETEST_CACHE, else
// os.UserCacheDir()/electd/kube (~/.cache/electd/kube).
func CacheRoot() string {
	if d := os.Getenv(CacheEnv); d != "" {
		return d
	}
	root, err := os.UserCacheDir()
	if err != nil || root == "" {
		root = os.TempDir()
	}
	return filepath.Join(root, "electd", "kube")
}

// sourceDir is the nested module's directory. The test binary knows where
// this file was compiled from.
func sourceDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", errors.New("kubetest: cannot locate the kube module (built with -trimpath?)")
	}
	dir := filepath.Join(filepath.Dir(file), "kube")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("kubetest: the kube module is missing: %w", err)
	}
	return dir, nil
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// k8sVersionRE finds the Kubernetes version the module requires.
var k8sVersionRE = regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v1\.(\d+)\.\d+)\s*$`)

// ldflags strips the binary and stamps the version the module requires, as
// Kubernetes' own build does, so that /version, the kubelet and `kubectl
// version` name it (unstamped, they say v0.0.0-master).
func ldflags(src string) (string, error) {
	b, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("kubetest: %w", err)
	}
	m := k8sVersionRE.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("kubetest: %s/go.mod requires no k8s.io/kubernetes v1.x.y", src)
	}
	const v = "k8s.io/component-base/version"
	return fmt.Sprintf("-s -w -X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean",
		v, m[1], v, v, m[2], v), nil
}

// sourceFiles are the files the binaries are built from, relative to the
// module: go.mod, go.sum, the package the components share and each command's main.go.
func sourceFiles() []string {
	files := []string{"go.mod", "go.sum", filepath.Join("internal", "kubemain", "kubemain.go")}
	for _, c := range append(append([]string(nil), hostCommands...), staticCommands...) {
		files = append(files, filepath.Join(c, "main.go"))
	}
	return files
}

// cacheKey hashes what the binaries depend on: the module's files, the
// link flags and the Go toolchain that builds them.
func cacheKey(src, goBin string) (string, error) {
	h := sha256.New()
	flags, err := ldflags(src)
	if err != nil {
		return "", err
	}
	fmt.Fprintln(h, flags)
	for _, name := range sourceFiles() {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return "", fmt.Errorf("kubetest: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	out, err := exec.Command(goBin, "env", "GOVERSION", "GOOS", "GOARCH").Output()
	if err != nil {
		return "", fmt.Errorf("kubetest: %s env: %w", goBin, err)
	}
	h.Write(out)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func complete(b *Binaries) bool {
	for _, p := range b.all() {
		if !isExecutable(p) {
			return false
		}
	}
	return true
}

func buildCached(progress io.Writer) (*Binaries, error) {
	if progress == nil {
		progress = io.Discard
	}
	src, err := sourceDir()
	if err != nil {
		return nil, err
	}
	goBin := goTool()
	key, err := cacheKey(src, goBin)
	if err != nil {
		return nil, err
	}
	root := CacheRoot()
	dir := filepath.Join(root, key)
	if b := binariesIn(dir); complete(b) {
		return b, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	unlock, err := lockFile(filepath.Join(root, "build.lock"), progress)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if b := binariesIn(dir); complete(b) { // another process built them while we waited
		return b, nil
	}
	removeStaleBuilds(root)
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	defer os.RemoveAll(tmp)

	fmt.Fprintf(progress, "kubetest: building %s from %s into %s (minutes the first time)\n",
		strings.Join(append(append([]string(nil), hostCommands...), staticCommands...), ", "), src, dir)
	start := time.Now()
	flags, err := ldflags(src)
	if err != nil {
		return nil, err
	}
	if err := goBuild(goBin, src, tmp, flags, false, hostCommands); err != nil {
		return nil, err
	}
	if err := goBuild(goBin, src, tmp, flags, true, staticCommands); err != nil {
		return nil, err
	}
	// The directory appears whole or not at all: a killed build leaves
	// only a build- directory, removed by the next build.
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	fmt.Fprintf(progress, "kubetest: built in %v: %s\n", time.Since(start).Round(time.Second), dir)
	return binariesIn(dir), nil
}

// goBuild builds commands of the module in src into dir, in one go build.
func goBuild(goBin, src, dir, flags string, static bool, commands []string) error {
	args := []string{"build", "-ldflags=" + flags, "-o", dir + string(filepath.Separator)}
	for _, c := range commands {
		args = append(args, "./"+c)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if static {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubetest: go build of %s in %s failed: %v\n%s", strings.Join(commands, " "), src, err, tail(out.String(), 4000))
	}
	return nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// lockFile takes an exclusive flock (tests/harness/buildcache), waiting for
// another holder; the kernel drops it if the holder dies.
func lockFile(path string, progress io.Writer) (unlock func(), err error) {
	return buildcache.Lock(path, func() {
		if progress != nil {
			fmt.Fprintf(progress, "kubetest: another process is building the Kubernetes binaries; waiting for it (%s)\n", path)
		}
	})
}

// removeStaleBuilds deletes build- directories that a killed build left
// behind (called with the build lock held, so none is in use), and
// binaries of other keys not rebuilt for a week: each set is about 600 MB.
func removeStaleBuilds(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, "build-*"))
	for _, d := range dirs {
		os.RemoveAll(d)
	}
	keys, _ := filepath.Glob(filepath.Join(root, "????????????????"))
	for _, d := range keys {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > 7*24*time.Hour {
			os.RemoveAll(d)
		}
	}
}

func tail(s string, n int) string { return proctest.Tail(s, n) }
