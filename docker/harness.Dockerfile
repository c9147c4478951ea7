# The capacity harness, janitor-capacity, built in release mode from the benchmarks' workspace. The build context is the
# workspace root (see docker/compose.yaml); .dockerignore at the root keeps target/ and .git out of it.
# One image plays every role: `serve-fleet` (the fleet host) in the server container, `capacity` in the client
# container. On a machine with no registry, `cargo xtask benchmark-capacity --docker` uses docker/local.Dockerfile
# instead.

FROM rust:1-slim-bookworm AS build
WORKDIR /janitor
COPY . .
# The cargo registry and the target directory are BuildKit caches, so a rebuild after a code change
# recompiles only what changed; the binary is copied out of the cache in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/janitor/target \
    cargo build --release --locked --manifest-path benchmarks/Cargo.toml --target-dir target \
    --bin janitor-capacity \
    && cp target/release/janitor-capacity /usr/local/bin/janitor-capacity

FROM debian:bookworm-slim
# pgbench, which the client runs beside the identify endpoint for the sweep's comparison.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-client \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/janitor-capacity /usr/local/bin/janitor-capacity
# Reports go to docs/benchmarks below the working directory; compose mounts the repository's folder there.
WORKDIR /janitor
RUN mkdir -p docs/benchmarks
ENTRYPOINT ["janitor-capacity"]
