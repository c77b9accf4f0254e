package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

type platform struct{ goos, goarch string }

// release is one `make dist`.
type release struct {
	version, commit string
	out             string
	pkg             string
	platforms       []platform
}

// binaryName is electd-<version>-<os>-<arch>.
func (r *release) binaryName(p platform) string {
	return fmt.Sprintf("electd-%s-%s-%s", r.version, p.goos, p.goarch)
}

// build writes every release file into r.out and returns their names.
func (r *release) build(progress io.Writer) ([]string, error) {
	if err := emptyDir(r.out); err != nil {
		return nil, err
	}
	var names []string
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s", r.version, r.commit)
	for _, p := range r.platforms {
		name := r.binaryName(p)
		fmt.Fprintf(progress, "building %s\n", name)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", filepath.Join(r.out, name), r.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.goos, "GOARCH="+p.goarch, "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build for %s/%s: %v\n%s", p.goos, p.goarch, err, out)
		}
		names = append(names, name)
	}
	if err := copyFile("LICENSE", filepath.Join(r.out, "LICENSE")); err != nil {
		return nil, err
	}
	notices, err := thirdPartyNotices(r.pkg, r.platforms)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(r.out, "THIRD_PARTY_LICENSES"), notices, 0o644); err != nil {
		return nil, err
	}
	names = append(names, "LICENSE", "THIRD_PARTY_LICENSES")
	sums, err := checksums(r.out, names)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(r.out, "SHA256SUMS"), sums, 0o644); err != nil {
		return nil, err
	}
	return append(names, "SHA256SUMS"), nil
}

// emptyDir creates dir, or accepts it if it holds nothing.
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s holds %s already; remove it first (make dist does)", dir, entries[0].Name())
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// checksums is the SHA256SUMS of the named files of dir, sorted by name,
// one "<hex>  <name>" line each (sha256sum's text format).
func checksums(dir string, names []string) ([]byte, error) {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	var b strings.Builder
	for _, n := range sorted {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), n)
	}
	return []byte(b.String()), nil
}

var errNoLicense = errors.New("no licence file")
