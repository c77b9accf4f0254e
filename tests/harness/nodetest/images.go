package nodetest

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/electd/electd/tools/dist/image"
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

// etcFiles stand in for the Dockerfile's base image (distroless static,
// nonroot), which no registry here serves: what the manifests rely on of
// it, the nonroot user 65532 they run as, its home, and /tmp. The node's
// other images get them too.
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

// electdImage is the Dockerfile's image, assembled without a Docker engine
// from the recipe the Dockerfile is rendered from (tools/dist/image): the
// same `go run ./tools/dist` build, the binary and licences at the same
// paths, its user, port, entrypoint and labels. The one difference is the
// base: distroless cannot be fetched here, so etcFiles stand in for what
// the manifests rely on of it.
func electdImage(moduleDir, work string) (Image, error) {
	r := image.Electd
	out := filepath.Join(work, "dist")
	commit := "e2e"
	if b, err := exec.Command("git", "-C", moduleDir, "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(b))
	}
	const version = "v0.0.0-e2e"
	cmd := exec.Command("go", append([]string{"run", "./tools/dist"}, image.DistArgs(version, commit, out, "linux", "amd64")...)...)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return Image{}, fmt.Errorf("nodetest: go run ./tools/dist: %v\n%s", err, tail(string(b), 3000))
	}
	files := append([]File(nil), etcFiles...)
	files = append(files, File{Path: r.Binary, Mode: 0o755, Src: filepath.Join(out, image.DistBinary(version, "linux", "amd64"))})
	for _, d := range image.Docs {
		files = append(files, File{Path: path.Join(r.DocDir, d), Mode: 0o644, Src: filepath.Join(out, d)})
	}
	return Image{
		Ref: ElectdImage, Entrypoint: []string{r.Binary}, User: r.User, Ports: []string{fmt.Sprintf("%d/tcp", r.Port)},
		Labels: r.LabelValues(version, commit, ""),
		Files:  files,
	}, nil
}

// staticImage is an image of one static binary at /<name>.
func staticImage(ref, bin, name string) Image {
	f := File{Path: "/" + name, Mode: 0o755, Src: bin}
	return Image{Ref: ref, Entrypoint: []string{"/" + name}, User: "65532:65532", Files: append(append([]File(nil), etcFiles...), f)}
}

// buildImages writes every image the node tests use as OCI tarballs in work
// and returns their paths.
func buildImages(moduleDir, work, leaseSidecar string) ([]string, error) {
	for _, p := range []string{"podapp", "pause"} {
		if err := goBuild(moduleDir, "./tests/harness/nodetest/"+p, filepath.Join(work, p)); err != nil {
			return nil, err
		}
	}
	electd, err := electdImage(moduleDir, work)
	if err != nil {
		return nil, err
	}
	zk, err := zooKeeperImage()
	if err != nil {
		return nil, err
	}
	images := []Image{electd, zk}
	for _, s := range []struct{ ref, bin, name string }{
		{AppImage, filepath.Join(work, "podapp"), "podapp"},
		{PauseImage, filepath.Join(work, "pause"), "pause"},
		{LeaseSidecarImage, leaseSidecar, "lease-sidecar"},
	} {
		images = append(images, staticImage(s.ref, s.bin, s.name))
	}
	var paths []string
	for i, im := range images {
		p := filepath.Join(work, fmt.Sprintf("image-%d.tar", i))
		if err := im.WriteOCI(p); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}
