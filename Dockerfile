# syntax=docker/dockerfile:1
# electd container image: a static binary on distroless, running as nonroot.
#
# Generated from tools/dist/image (the recipe tests/harness/nodetest also builds the
# node tests' image from): edit the recipe, then run go generate ./tools/dist.
#
#   make docker      stamps the version, commit and creation time from git
#                    (VERSION=... COMMIT=... to override, IMAGE=... to name it)
#
# The build context has no .git (.dockerignore), so a plain `docker build .`
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
ARG GO_IMAGE=golang:1.26.8-bookworm@sha256:9fdc884aacc3bec89b20ffc69f4bb369c78210e3e4f600387b5128b12c199f81
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot@sha256:f5b485ea962d9bd1186b2f6b3a061191539b905b82ec395de78cbfae51f20e35

# The build runs on the builder's own platform and cross-compiles (no
# emulation): `docker buildx build --platform linux/amd64,linux/arm64 .`
FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
ARG COMMIT=unknown
# tools/dist is `make dist`: a static, stamped binary plus the licences of
# everything in it (THIRD_PARTY_LICENSES), here for the target platform only.
RUN go run ./tools/dist -version "${VERSION}" -commit "${COMMIT}" -out /out -platforms "${TARGETOS}/${TARGETARCH}" \
 && mv "/out/electd-${VERSION}-${TARGETOS}-${TARGETARCH}" /out/electd

FROM ${BASE_IMAGE}
ARG VERSION=dev
ARG COMMIT=unknown
ARG CREATED=
LABEL org.opencontainers.image.title="electd" \
      org.opencontainers.image.description="Leader-election sidecar on Apache ZooKeeper (Curator's node layout): HTTP and Prometheus, no ZooKeeper client in the app" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://github.com/electd/electd" \
      org.opencontainers.image.url="https://github.com/electd/electd" \
      org.opencontainers.image.documentation="https://github.com/electd/electd#readme" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="gcr.io/distroless/static-debian12:nonroot"
COPY --from=build /out/electd /electd
COPY --from=build /out/LICENSE /out/THIRD_PARTY_LICENSES /usr/share/doc/electd/
USER 65532:65532
EXPOSE 4040
ENTRYPOINT ["/electd"]
