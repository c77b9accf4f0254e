package nodetest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Image is a single-layer container image, written as an OCI image layout
// tarball that `ctr images import` reads: no registry and no Docker engine.
type Image struct {
	Ref        string            // full reference, e.g. docker.io/library/electd:e2e (the CRI resolves a short one to this)
	Entrypoint []string          // absolute path first
	Cmd        []string          // optional
	User       string            // e.g. "65532:65532"; empty: root
	Env        []string          // PATH is added
	Labels     map[string]string // org.opencontainers.image.*
	Ports      []string          // exposed, e.g. "4040/tcp"
	Files      []File            // the layer's content; parent directories are added
}

// File is one entry of the layer: Data, or the content of the file at Src
// on this machine, read when the image is written (a JRE is too big to
// hold twice).
type File struct {
	Path string // absolute, in the image
	Mode int64  // permission bits; a directory has Dir set
	Dir  bool
	Data []byte
	Src  string
}

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// writeLayer writes the files to w as an uncompressed tar, owned by root,
// with every parent directory, in path order (deterministic: the same files
// give the same digest).
func writeLayer(w io.Writer, files []File) error {
	all := map[string]File{}
	for _, f := range files {
		all[f.Path] = f
		for d := parent(f.Path); d != "/"; d = parent(d) {
			if _, ok := all[d]; !ok {
				all[d] = File{Path: d, Mode: 0o755, Dir: true}
			}
		}
	}
	paths := make([]string, 0, len(all))
	for p := range all {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	tw := tar.NewWriter(w)
	epoch := time.Unix(0, 0)
	for _, p := range paths {
		f := all[p]
		h := &tar.Header{Name: p[1:], Mode: f.Mode, ModTime: epoch, Format: tar.FormatPAX}
		if f.Dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		data := f.Data
		if f.Src != "" {
			b, err := os.ReadFile(f.Src)
			if err != nil {
				return fmt.Errorf("nodetest: %w", err)
			}
			data = b
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return tw.Close()
}

func parent(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

// WriteOCI writes the image as an OCI image layout tarball at path: the
// layer, the config and the manifest as blobs, and an index naming the
// image with the io.containerd.image.name annotation, which `ctr images
// import` uses as the image's name. The layer goes through a file beside
// path, so that an image's content is in memory one file at a time.
func (im Image) WriteOCI(path string) error {
	layerFile, err := os.Create(path + ".layer")
	if err != nil {
		return fmt.Errorf("nodetest: %w", err)
	}
	defer os.Remove(layerFile.Name())
	defer layerFile.Close()
	sum := sha256.New()
	counted := &countWriter{w: io.MultiWriter(layerFile, sum)}
	if err := writeLayer(counted, im.Files); err != nil {
		return err
	}
	layerDigest := "sha256:" + hex.EncodeToString(sum.Sum(nil))
	exposed := map[string]struct{}{}
	for _, p := range im.Ports {
		exposed[p] = struct{}{}
	}
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      time.Unix(0, 0).UTC(),
		"config": map[string]any{
			"User":         im.User,
			"Entrypoint":   im.Entrypoint,
			"Cmd":          im.Cmd,
			"Env":          append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, im.Env...),
			"Labels":       im.Labels,
			"ExposedPorts": exposed,
			"WorkingDir":   "/",
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digest(config), Size: int64(len(config))},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: layerDigest, Size: counted.n}},
	})
	if err != nil {
		return err
	}
	tag := im.Ref[lastColon(im.Ref)+1:]
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []descriptor{{
			MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: digest(manifest), Size: int64(len(manifest)),
			Annotations: map[string]string{"io.containerd.image.name": im.Ref, "org.opencontainers.image.ref.name": tag},
		}},
	})
	if err != nil {
		return err
	}
	if _, err := layerFile.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("nodetest: %w", err)
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("nodetest: %w", err)
	}
	defer out.Close()
	tw := tar.NewWriter(out)
	put := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	blob := func(b []byte) error {
		return put("blobs/sha256/"+digest(b)[len("sha256:"):], int64(len(b)), bytes.NewReader(b))
	}
	const layout = `{"imageLayoutVersion":"1.0.0"}`
	if err := put("oci-layout", int64(len(layout)), strings.NewReader(layout)); err != nil {
		return err
	}
	if err := put("blobs/sha256/"+layerDigest[len("sha256:"):], counted.n, layerFile); err != nil {
		return err
	}
	for _, b := range [][]byte{config, manifest} {
		if err := blob(b); err != nil {
			return err
		}
	}
	if err := put("index.json", int64(len(index)), bytes.NewReader(index)); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return out.Close()
}

// countWriter counts what passes through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func lastColon(ref string) int {
	for i := len(ref) - 1; i >= 0 && ref[i] != '/'; i-- {
		if ref[i] == ':' {
			return i
		}
	}
	panic(fmt.Sprintf("nodetest: image reference %q has no tag", ref))
}
