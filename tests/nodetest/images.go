package nodetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Image references. The CRI resolves a manifest's short reference as a
// registry client does (electd:dev is docker.io/library/electd:dev), so each
// image is imported under its full name.
const (
	ElectdImage       = "docker.io/library/electd:e2e"
	AppImage          = "docker.io/library/electd-e2e-app:1"
	PauseImage        = "docker.io/library/electd-e2e-pause:1"
	LeaseSidecarImage = "docker.io/library/electd-e2e-lease-sidecar:1"
)

// etcFiles give every image what the Dockerfile's base image
// (distroless static, nonroot) provides and the manifests rely on: the
// nonroot user 65532 they run as, its home, and /tmp.
var etcFiles = []File{
	{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
	{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
	{Path: "/home/nonroot", Mode: 0o700, Dir: true},
	{Path: "/tmp", Mode: 0o1777, Dir: true},
}

// goBuild builds a static binary of a package of the main module.
func goBuild(moduleDir, pkg, out string, env ...string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nodetest: go build %s: %v\n%s", pkg, err, tail(string(out), 3000))
	}
	return nil
}

// ModuleDir is the root of the electd module that holds the working
// directory.
func ModuleDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		return "", fmt.Errorf("nodetest: not inside the electd module (go env GOMOD: %v)", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// electdImage is what the Dockerfile builds, without a Docker engine: the
// static, stamped binary of `go run ./tools/dist` (the Dockerfile's own
// build step) at /electd, the licences under /usr/share/doc/electd, user
// 65532, port 4040 and the Dockerfile's labels.
func electdImage(moduleDir, work string) (Image, error) {
	out := filepath.Join(work, "dist")
	commit := "e2e"
	if b, err := exec.Command("git", "-C", moduleDir, "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(b))
	}
	const version = "v0.0.0-e2e"
	cmd := exec.Command("go", "run", "./tools/dist", "-version", version, "-commit", commit, "-out", out, "-platforms", "linux/amd64")
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return Image{}, fmt.Errorf("nodetest: go run ./tools/dist: %v\n%s", err, tail(string(b), 3000))
	}
	files := append([]File(nil), etcFiles...)
	for _, f := range []struct {
		src, dst string
		mode     int64
	}{
		{"electd-" + version + "-linux-amd64", "/electd", 0o755},
		{"LICENSE", "/usr/share/doc/electd/LICENSE", 0o644},
		{"THIRD_PARTY_LICENSES", "/usr/share/doc/electd/THIRD_PARTY_LICENSES", 0o644},
	} {
		file, err := fileFrom(filepath.Join(out, f.src), f.dst, f.mode)
		if err != nil {
			return Image{}, err
		}
		files = append(files, file)
	}
	return Image{
		Ref: ElectdImage, Entrypoint: []string{"/electd"}, User: "65532:65532", Ports: []string{"4040/tcp"},
		Labels: map[string]string{
			"org.opencontainers.image.title":    "electd",
			"org.opencontainers.image.version":  version,
			"org.opencontainers.image.revision": commit,
			"org.opencontainers.image.source":   "https://github.com/electd/electd",
			"org.opencontainers.image.licenses": "Apache-2.0",
		},
		Files: files,
	}, nil
}

// staticImage is an image of one static binary at /<name>.
func staticImage(ref, bin, name string) (Image, error) {
	f, err := fileFrom(bin, "/"+name, 0o755)
	if err != nil {
		return Image{}, err
	}
	return Image{Ref: ref, Entrypoint: []string{"/" + name}, User: "65532:65532", Files: append(append([]File(nil), etcFiles...), f)}, nil
}

// buildImages writes every image the node tests use as OCI tarballs in work
// and returns their paths.
func buildImages(moduleDir, work, leaseSidecar string) ([]string, error) {
	for _, p := range []string{"podapp", "pause"} {
		if err := goBuild(moduleDir, "./tests/nodetest/"+p, filepath.Join(work, p)); err != nil {
			return nil, err
		}
	}
	electd, err := electdImage(moduleDir, work)
	if err != nil {
		return nil, err
	}
	var images = []Image{electd}
	for _, s := range []struct{ ref, bin, name string }{
		{AppImage, filepath.Join(work, "podapp"), "podapp"},
		{PauseImage, filepath.Join(work, "pause"), "pause"},
		{LeaseSidecarImage, leaseSidecar, "lease-sidecar"},
	} {
		im, err := staticImage(s.ref, s.bin, s.name)
		if err != nil {
			return nil, err
		}
		images = append(images, im)
	}
	var paths []string
	for i, im := range images {
		var buf bytes.Buffer
		if err := im.WriteOCI(&buf); err != nil {
			return nil, err
		}
		p := filepath.Join(work, fmt.Sprintf("image-%d.tar", i))
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			return nil, fmt.Errorf("nodetest: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}
