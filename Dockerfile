# syntax=docker/dockerfile:1
# gitpeer's image: a static binary over scratch with a CA bundle and the nonroot user (UID 65532).
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg VERSION=$(cat VERSION) \
#     --build-arg REVISION=$(git rev-parse HEAD) --build-arg CREATED=$(git log -1 --format=%cd --date=iso-strict) .
# `make image` builds the same image without a daemon (test/image); its test checks that this file's
# final stage declares the same entrypoint, command, user, volume and labels.
# The root filesystem can be read-only: the agent writes only to /data (its --data-dir, a volume)
# and /tmp (mount an emptyDir, as config/manager/deployment.yaml does).

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS TARGETARCH
ARG VERSION=dev
ENV GOTOOLCHAIN=local CGO_ENABLED=0
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /rootfs/gitpeer ./cmd/gitpeer \
 && mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp /data \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && cp test/image/rootfs/etc/passwd test/image/rootfs/etc/group /rootfs/etc/ \
 && chmod 1777 /rootfs/tmp

FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
COPY --from=build /rootfs/ /
COPY --from=build --chown=65532:65532 /data /data
LABEL org.opencontainers.image.title="gitpeer" \
      org.opencontainers.image.description="Liqo peering through a shared Git repository" \
      org.opencontainers.image.source="https://github.com/gitpeer/gitpeer" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.created="${CREATED}"
USER 65532:65532
WORKDIR /
VOLUME ["/data"]
ENTRYPOINT ["/gitpeer"]
CMD ["agent", "--data-dir=/data"]
