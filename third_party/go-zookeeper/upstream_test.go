// Package gozookeeper holds the check that the copy in zk/ is upstream
// go-zookeeper/zk at Version with electd.patch applied, and nothing else.
package gozookeeper

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Version is the upstream release the copy is made from (README.md).
const Version = "v1.0.4"

// The copy holds upstream's non-test .go files and LICENSE; electd.patch is
// the whole difference. The upstream module comes from the module proxy
// into the module cache; git applies the patch to it.
func TestCopyIsUpstreamPlusPatch(t *testing.T) {
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/go-zookeeper/zk@"+Version).Output()
	if err != nil {
		t.Fatalf("go mod download github.com/go-zookeeper/zk@%s: %v (the module proxy must be reachable)", Version, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %q: %v", out, err)
	}
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "zk"), 0o755); err != nil {
		t.Fatal(err)
	}
	upstream, err := os.ReadDir(mod.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range upstream {
		name := e.Name()
		if e.IsDir() || name != "LICENSE" && (!strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(mod.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "zk", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	patch, err := filepath.Abs("electd.patch")
	if err != nil {
		t.Fatal(err)
	}
	apply := exec.Command("git", "apply", "--unsafe-paths", patch)
	apply.Dir = work
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply electd.patch to upstream %s: %v\n%s", Version, err, out)
	}
	local, err := os.ReadDir("zk")
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range local {
		have = append(have, e.Name())
	}
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(have, want) {
		t.Errorf("zk/ holds %v, upstream %s's non-test files are %v", have, Version, want)
	}
	for _, name := range want {
		got, err := os.ReadFile(filepath.Join("zk", name))
		if err != nil {
			continue // reported above
		}
		patched, err := os.ReadFile(filepath.Join(work, "zk", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, patched) {
			t.Errorf("zk/%s is not upstream %s with electd.patch applied: make the change in electd.patch too (diff -u against the module cache's copy)", name, Version)
		}
	}
}
