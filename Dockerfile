# syntax=docker/dockerfile:1
# electd container image: a static binary on distroless, running as nonroot.
#   make docker                 (stamps version and commit from git)
#   docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse --short HEAD) -t electd .

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/electd ./cmd/electd

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/electd /electd
USER 65532:65532
EXPOSE 4040
ENTRYPOINT ["/electd"]
