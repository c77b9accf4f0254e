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

// File is one entry of the layer.
type File struct {
	Path string // absolute, in the image
	Mode int64  // permission bits; a directory has Dir set
	Dir  bool
	Data []byte
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

// layer writes the files as an uncompressed tar, owned by root, with every
// parent directory, in path order (deterministic: the same files give the
// same digest).
func layer(files []File) ([]byte, error) {
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
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, p := range paths {
		f := all[p]
		h := &tar.Header{Name: p[1:], Mode: f.Mode, ModTime: epoch, Format: tar.FormatPAX}
		if f.Dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func parent(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

// WriteOCI writes the image as an OCI image layout tarball to w: the layer,
// the config and the manifest as blobs, and an index naming the image with
// the io.containerd.image.name annotation, which `ctr images import` uses
// as the image's name.
func (im Image) WriteOCI(w io.Writer) error {
	lay, err := layer(im.Files)
	if err != nil {
		return err
	}
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
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digest(lay)}},
	})
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digest(config), Size: int64(len(config))},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: digest(lay), Size: int64(len(lay))}},
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
	tw := tar.NewWriter(w)
	put := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	blob := func(b []byte) error { return put("blobs/sha256/"+digest(b)[len("sha256:"):], b) }
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	for _, b := range [][]byte{lay, config, manifest} {
		if err := blob(b); err != nil {
			return err
		}
	}
	if err := put("index.json", index); err != nil {
		return err
	}
	return tw.Close()
}

func lastColon(ref string) int {
	for i := len(ref) - 1; i >= 0 && ref[i] != '/'; i-- {
		if ref[i] == ':' {
			return i
		}
	}
	panic(fmt.Sprintf("nodetest: image reference %q has no tag", ref))
}

// fileFrom reads a file from disk into a File at path in the image.
func fileFrom(src, path string, mode int64) (File, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return File{}, fmt.Errorf("nodetest: %w", err)
	}
	return File{Path: path, Mode: mode, Data: b}, nil
}
