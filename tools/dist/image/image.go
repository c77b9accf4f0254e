// Package image is the recipe of electd's container image, in one place.
// The Dockerfile is rendered from it (`go generate ./tools/dist`; a test
// fails when the file differs), and tests/harness/nodetest assembles the image the
// node tests run from the same recipe, so the two cannot drift: the same
// `go run ./tools/dist` build, the same files at the same paths, user,
// port, entrypoint and labels. Only the base image differs on the node,
// where no registry serves it: a stand-in made there (docs/kubernetes.md).
package image

import (
	"fmt"
	"strings"
)

// Recipe is a two-stage image: tools/dist builds the binary and the
// licences in BuildImage, and they are copied onto BaseImage.
type Recipe struct {
	// BuildImage and BaseImage are pinned by digest: a tag can be moved to
	// other content, a digest cannot.
	BuildImage, BaseImage string
	BaseName              string // BaseImage without its digest, for the base.name label
	Binary                string // where the binary goes; also the entrypoint
	DocDir                string // where LICENSE and THIRD_PARTY_LICENSES go
	User                  string
	Port                  int
	// Labels are org.opencontainers.image.<key>; a value may use
	// ${VERSION}, ${COMMIT} and ${CREATED}, the build's arguments.
	Labels [][2]string
}

// Electd is electd's image.
var Electd = Recipe{
	BuildImage: "golang:1.26.8-bookworm@sha256:9fdc884aacc3bec89b20ffc69f4bb369c78210e3e4f600387b5128b12c199f81",
	BaseImage:  "gcr.io/distroless/static-debian12:nonroot@sha256:f5b485ea962d9bd1186b2f6b3a061191539b905b82ec395de78cbfae51f20e35",
	BaseName:   "gcr.io/distroless/static-debian12:nonroot",
	Binary:     "/electd",
	DocDir:     "/usr/share/doc/electd",
	User:       "65532:65532",
	Port:       4040,
	Labels: [][2]string{
		{"title", "electd"},
		{"description", "Leader-election sidecar on Apache ZooKeeper (Curator's node layout): HTTP and Prometheus, no ZooKeeper client in the app"},
		{"version", "${VERSION}"},
		{"revision", "${COMMIT}"},
		{"created", "${CREATED}"},
		{"source", "https://github.com/electd/electd"},
		{"url", "https://github.com/electd/electd"},
		{"documentation", "https://github.com/electd/electd#readme"},
		{"licenses", "Apache-2.0"},
		{"base.name", "gcr.io/distroless/static-debian12:nonroot"},
	},
}

// DistArgs are the arguments of `go run ./tools/dist` that build the
// image's files for one platform into out: the static, stamped binary
// (named electd-<version>-<os>-<arch>), LICENSE and THIRD_PARTY_LICENSES.
func DistArgs(version, commit, out, goos, goarch string) []string {
	return []string{"-version", version, "-commit", commit, "-out", out, "-platforms", goos + "/" + goarch}
}

// DistBinary is the name DistArgs' build gives the binary in out.
func DistBinary(version, goos, goarch string) string {
	return fmt.Sprintf("electd-%s-%s-%s", version, goos, goarch)
}

// Docs are the files besides the binary, copied to DocDir.
var Docs = []string{"LICENSE", "THIRD_PARTY_LICENSES"}

// LabelValues are the labels with the build's arguments filled in.
func (r Recipe) LabelValues(version, commit, created string) map[string]string {
	rep := strings.NewReplacer("${VERSION}", version, "${COMMIT}", commit, "${CREATED}", created)
	m := map[string]string{}
	for _, l := range r.Labels {
		m["org.opencontainers.image."+l[0]] = rep.Replace(l[1])
	}
	return m
}

// Dockerfile renders the recipe as the repository's Dockerfile.
func (r Recipe) Dockerfile() string {
	var b strings.Builder
	b.WriteString(dockerfileHead)
	fmt.Fprintf(&b, "ARG GO_IMAGE=%s\nARG BASE_IMAGE=%s\n\n", r.BuildImage, r.BaseImage)
	// The RUN line is DistArgs with the build's arguments as shell
	// variables, so that `go run ./tools/dist` is called the same way here
	// and in tests/harness/nodetest.
	var args []string
	for _, a := range DistArgs("${VERSION}", "${COMMIT}", "/out", "${TARGETOS}", "${TARGETARCH}") {
		args = append(args, shellWord(a))
	}
	built := shellWord("/out/" + DistBinary("${VERSION}", "${TARGETOS}", "${TARGETARCH}"))
	fmt.Fprintf(&b, `# The build runs on the builder's own platform and cross-compiles (no
# emulation): `+"`docker buildx build --platform linux/amd64,linux/arm64 .`"+`
FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
ARG COMMIT=unknown
# tools/dist is `+"`make dist`"+`: a static, stamped binary plus the licences of
# everything in it (THIRD_PARTY_LICENSES), here for the target platform only.
RUN go run ./tools/dist %s \
 && mv %s /out/electd

FROM ${BASE_IMAGE}
ARG VERSION=dev
ARG COMMIT=unknown
ARG CREATED=
`, strings.Join(args, " "), built)
	b.WriteString("LABEL ")
	for i, l := range r.Labels {
		if i > 0 {
			b.WriteString(" \\\n      ")
		}
		fmt.Fprintf(&b, "org.opencontainers.image.%s=%q", l[0], l[1])
	}
	fmt.Fprintf(&b, "\nCOPY --from=build /out/electd %s\n", r.Binary)
	var docs []string
	for _, d := range Docs {
		docs = append(docs, "/out/"+d)
	}
	fmt.Fprintf(&b, "COPY --from=build %s %s/\n", strings.Join(docs, " "), r.DocDir)
	fmt.Fprintf(&b, "USER %s\nEXPOSE %d\nENTRYPOINT [%q]\n", r.User, r.Port, r.Binary)
	return b.String()
}

// shellWord double-quotes a word that expands a variable.
func shellWord(s string) string {
	if strings.Contains(s, "$") {
		return `"` + s + `"`
	}
	return s
}

const dockerfileHead = `# syntax=docker/dockerfile:1
# electd container image: a static binary on distroless, running as nonroot.
#
# Generated from tools/dist/image (the recipe tests/harness/nodetest also builds the
# node tests' image from): edit the recipe, then run go generate ./tools/dist.
#
#   make docker      stamps the version, commit and creation time from git
#                    (VERSION=... COMMIT=... to override, IMAGE=... to name it)
#
# The build context has no .git (.dockerignore), so a plain ` + "`docker build .`" + `
# cannot find the version and stamps "dev" and "unknown"; pass them:
#   docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse --short=12 HEAD) \
#     --build-arg CREATED=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ) -t electd .
#
# Base images are pinned by digest: a tag can be moved to other content, a
# digest cannot. These are multi-platform index digests, taken from Renovate's
# digest-update pull requests and public Dockerfiles that pin the same tags
# (golang:1.26-bookworm -> 9fdc884, 2026-09-13; static-debian12:nonroot ->
# f5b485e, 2026-08-03); this project's machines reach no registry to confirm
# them. Check or refresh them where one is reachable:
#   docker buildx imagetools inspect golang:1.26.8-bookworm --format '{{json .Manifest.Digest}}'
#   docker buildx imagetools inspect gcr.io/distroless/static-debian12:nonroot --format '{{json .Manifest.Digest}}'
# and override them without editing this file:
#   docker build --build-arg GO_IMAGE=golang:1.26.8-bookworm@sha256:... --build-arg BASE_IMAGE=... .
`
