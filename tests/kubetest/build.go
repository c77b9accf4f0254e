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
	"syscall"
	"time"
)

// CacheEnv names a directory that replaces the default cache root
// (os.UserCacheDir()/electd/kube-apiserver).
const CacheEnv = "ELECTD_KUBETEST_CACHE"

var built struct {
	once sync.Once
	path string
	err  error
}

// APIServer returns the path of a kube-apiserver binary built from the
// module in apiserver/ beside this file, building it first if this machine
// has none for the module's exact content and this Go version. The first
// build takes minutes (about 7 on 2 cores) and 2 GB of memory; afterwards
// it is a lookup. Builds are serialized across processes with a lock file,
// so test binaries started together build once. Logs go to progress
// (nil: discard).
func APIServer(progress io.Writer) (string, error) {
	built.once.Do(func() { built.path, built.err = buildCached(progress) })
	return built.path, built.err
}

// CacheRoot is where built binaries live: $ELECTD_KUBETEST_CACHE, else
// os.UserCacheDir()/electd/kube-apiserver (~/.cache/electd/kube-apiserver).
func CacheRoot() string {
	if d := os.Getenv(CacheEnv); d != "" {
		return d
	}
	root, err := os.UserCacheDir()
	if err != nil || root == "" {
		root = os.TempDir()
	}
	return filepath.Join(root, "electd", "kube-apiserver")
}

// sourceDir is the nested module's directory. The test binary knows where
// this file was compiled from.
func sourceDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", errors.New("kubetest: cannot locate the apiserver module (built with -trimpath?)")
	}
	dir := filepath.Join(filepath.Dir(file), "apiserver")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("kubetest: the apiserver module is missing: %w", err)
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
// Kubernetes' own build does, so that /version and `kubectl version` name
// it (unstamped, it says v0.0.0-master).
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

// cacheKey hashes what the binary depends on: the module's files, the
// link flags and the Go toolchain that builds it.
func cacheKey(src, goBin string) (string, error) {
	h := sha256.New()
	flags, err := ldflags(src)
	if err != nil {
		return "", err
	}
	fmt.Fprintln(h, flags)
	for _, name := range []string{"go.mod", "go.sum", "main.go"} {
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

func buildCached(progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	src, err := sourceDir()
	if err != nil {
		return "", err
	}
	goBin := goTool()
	key, err := cacheKey(src, goBin)
	if err != nil {
		return "", err
	}
	root := CacheRoot()
	bin := filepath.Join(root, key, "kube-apiserver")
	if isExecutable(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("kubetest: %w", err)
	}
	unlock, err := lockFile(filepath.Join(root, "build.lock"), progress)
	if err != nil {
		return "", err
	}
	defer unlock()
	if isExecutable(bin) { // another process built it while we waited
		return bin, nil
	}
	removeStaleBuilds(root)
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return "", fmt.Errorf("kubetest: %w", err)
	}
	defer os.RemoveAll(tmp)

	fmt.Fprintf(progress, "kubetest: building kube-apiserver from %s into %s (minutes the first time)\n", src, bin)
	start := time.Now()
	flags, err := ldflags(src)
	if err != nil {
		return "", err
	}
	cmd := exec.Command(goBin, "build", "-ldflags="+flags, "-o", filepath.Join(tmp, "kube-apiserver"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubetest: go build of kube-apiserver in %s failed: %v\n%s", src, err, tail(out.String(), 4000))
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", fmt.Errorf("kubetest: %w", err)
	}
	if err := os.Rename(filepath.Join(tmp, "kube-apiserver"), bin); err != nil {
		return "", fmt.Errorf("kubetest: %w", err)
	}
	fmt.Fprintf(progress, "kubetest: built kube-apiserver in %v: %s\n", time.Since(start).Round(time.Second), bin)
	return bin, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// lockFile takes an exclusive flock, waiting for another holder; the
// kernel drops it if the holder dies.
func lockFile(path string, progress io.Writer) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintf(progress, "kubetest: another process is building kube-apiserver; waiting for it (%s)\n", path)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("kubetest: lock %s: %w", path, err)
		}
	}
	return func() { f.Close() }, nil
}

// removeStaleBuilds deletes build- directories that a killed build left
// behind (called with the build lock held, so none is in use), and
// binaries of other keys not rebuilt for a week: each is 100 MB.
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

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
