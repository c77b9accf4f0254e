package main

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDistBuildsStampedStaticBinaries runs the release build for this
// machine's platform and checks what a user of the release relies on.
func TestDistBuildsStampedStaticBinaries(t *testing.T) {
	t.Chdir("../..") // dist runs from the repository root
	out := filepath.Join(t.TempDir(), "dist")
	host := runtime.GOOS + "/" + runtime.GOARCH
	var stdout, stderr bytes.Buffer
	if status := run([]string{"-version", "v0.0.0-dist", "-commit", "d1570123", "-out", out, "-platforms", host}, &stdout, &stderr); status != 0 {
		t.Fatalf("dist: status %d: %s", status, stderr.String())
	}
	bin := filepath.Join(out, "electd-v0.0.0-dist-"+runtime.GOOS+"-"+runtime.GOARCH)
	want := []string{filepath.Base(bin), "LICENSE", "THIRD_PARTY_LICENSES", "SHA256SUMS"}
	if got := strings.Fields(stdout.String()); !strings.HasSuffix(strings.Join(got, " "), strings.Join(want, " ")) {
		t.Errorf("dist printed %q, want it to end with the files %q", got, want)
	}

	// Stamped: --version names the version and commit.
	v, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(v), "electd v0.0.0-dist (commit d1570123, go") {
		t.Errorf("%s --version: %q, %v", bin, v, err)
	}

	// Static: no program interpreter, so it runs on distroless and Alpine.
	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked (PT_INTERP)", bin)
			}
		}
	}

	// SHA256SUMS checks out with the standard tool.
	check := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
	check.Dir = out
	if res, err := check.CombinedOutput(); err != nil || strings.Count(string(res), ": OK") != 3 {
		t.Errorf("sha256sum --check: %v\n%s", err, res)
	}

	// The licences: electd's, and those of what the binary contains,
	// the patched go-zookeeper (BSD-3-Clause) among them.
	lic, _ := os.ReadFile(filepath.Join(out, "LICENSE"))
	if !bytes.Contains(lic, []byte("Apache License")) || !bytes.Contains(lic, []byte("Version 2.0, January 2004")) {
		t.Error("dist/LICENSE is not the Apache License 2.0")
	}
	notices, _ := os.ReadFile(filepath.Join(out, "THIRD_PARTY_LICENSES"))
	zkLicense, err := os.ReadFile("third_party/go-zookeeper/zk/LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range [][]byte{
		[]byte("\nthird_party/go-zookeeper/zk\n"), bytes.TrimSpace(zkLicense),
		[]byte("\ngithub.com/go-chi/chi/v5@"), []byte("\ngithub.com/prometheus/client_golang@"),
		[]byte("github.com/prometheus/client_golang@v1.25.0 NOTICE:"), []byte("\nGo (standard library and runtime)\n"),
	} {
		if !bytes.Contains(notices, s) {
			t.Errorf("THIRD_PARTY_LICENSES lacks %.80q", s)
		}
	}
	// Test-only dependencies are not in the binary, so not in the notices.
	if bytes.Contains(notices, []byte("k8s.io/api@")) {
		t.Error("THIRD_PARTY_LICENSES lists k8s.io/api, which only tests use")
	}

	// A second run never mixes builds.
	stderr.Reset()
	if status := run([]string{"-version", "v0.0.0-dist", "-commit", "d1570123", "-out", out, "-platforms", host}, &stdout, &stderr); status != 1 ||
		!strings.Contains(stderr.String(), "holds") {
		t.Errorf("dist into a full directory: status %d, %q; want 1 and a refusal", status, stderr.String())
	}
}

func TestDistUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-commit", "c"},
		{"-version", "v1", "-commit", "c", "-platforms", "linux"},
		{"-version", "v1/x", "-commit", "c"},
		{"-nope"},
	} {
		var stdout, stderr bytes.Buffer
		if status := run(args, &stdout, &stderr); status != 2 || stderr.Len() == 0 {
			t.Errorf("dist %v: status %d, stderr %q; want 2 and a message", args, status, stderr.String())
		}
	}
}
