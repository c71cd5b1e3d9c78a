# syntax=docker/dockerfile:1
# The cronshard controller image (what charts/cronshard runs): one static binary, nothing else.
#
#   docker build -t ghcr.io/cronshard/cronshard:0.1.0 .
#
# Docker with BuildKit, or Podman/Buildah (the cache mounts below need either). Without a
# registry to pull the build stage from, `scripts/image build` makes the same final stage
# from a binary built on the host, with podman.

# Build stage: a static release binary (glibc with crt-static; TLS is rustls, so there is no
# libssl to link), with the exact dependency versions of Cargo.lock. The workspace needs
# Rust 1.95 or newer.
FROM docker.io/library/rust:1.95.0-bookworm AS build
WORKDIR /src
COPY . .
# The target directory is a cache mount, so the binary is copied out in the same step (without
# the release profile's line tables).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    target="$(rustc -vV | sed -n 's/^host: //p')" \
 && RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --locked -p cronshard --target "$target" \
 && strip --strip-debug -o /cronshard "target/$target/release/cronshard"

# Final stage: the binary alone; no shell, no libc, no CA bundle (the API server's CA comes
# from the service account or the kubeconfig), no time zone files (jiff's bundled tzdb).
# User 65532 as the chart's securityContext runs it; the root filesystem can be read-only.
FROM scratch
LABEL org.opencontainers.image.title="cronshard" \
      org.opencontainers.image.description="A sharded, multi-replica Kubernetes CronJob controller" \
      org.opencontainers.image.source="https://github.com/cronshard/cronshard" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /cronshard /cronshard
USER 65532:65532
# /metrics, /healthz and /readyz (--metrics-addr, default 0.0.0.0:8080).
EXPOSE 8080
ENTRYPOINT ["/cronshard"]
CMD ["run"]
