# The capacity harness, janitor-capacity, built in release mode from the benchmarks' workspace. The build context is the
# workspace root (see docker/compose.yaml); .dockerignore at the root keeps target/ and .git out of it.
# One image plays every role: `serve-fleet` in the server container, `capacity` in the client container.

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
COPY --from=build /usr/local/bin/janitor-capacity /usr/local/bin/janitor-capacity
# Reports go to docs/benchmarks below the working directory; compose mounts the repository's folder there.
WORKDIR /janitor
RUN mkdir -p docs/benchmarks
ENTRYPOINT ["janitor-capacity"]
