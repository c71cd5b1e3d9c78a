# syntax=docker/dockerfile:1
# The cronshard controller image (what charts/cronshard runs).
#
#   docker build -t ghcr.io/cronshard/cronshard:0.1.0 .
#
# Not built on the project's CI machines: they have no container engine. Build and push it
# where you have one (Docker with BuildKit, or Podman/Buildah: the cache mounts below need
# either).

# Build stage: the release binary, with the exact dependency versions of Cargo.lock. The
# workspace needs Rust 1.95 or newer ("rust:1" follows the latest stable release).
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
# The target directory is a cache mount, so the binary is copied out in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p cronshard \
 && cp target/release/cronshard /cronshard

# Final stage: glibc and libgcc, no shell, no package manager; user 65532 ("nonroot"). The time
# zone database is compiled into the binary (jiff's bundled tzdb), so none is needed here.
FROM gcr.io/distroless/cc-debian12:nonroot
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
