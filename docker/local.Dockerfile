# The image of `cargo xtask benchmark-capacity --docker` on a machine that reaches no image registry (see
# docs/capacity-docker.md). xtask builds it on the base image it imports from `debootstrap --variant=minbase
# bookworm`, with a context holding only this file and the `janitor-capacity` binary it built on the host
# (Debian bookworm as well, so the binary's C library is the image's). One image plays every role: the
# database, the fleet host (`serve-fleet`) and the client (`capacity`).
ARG BASE
FROM ${BASE}
# Debian's PostgreSQL: the server for the database container, pgbench for the client's comparison. The
# package's own cluster is not made; xtask initialises one in /var/lib/janitor-capacity when the container
# starts, as the native run does.
RUN mkdir -p /etc/postgresql-common/createcluster.d \
    && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/janitor.conf \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql \
    && rm -rf /var/lib/apt/lists/* \
    && install -d -o postgres -g postgres -m 700 /var/lib/janitor-capacity
COPY janitor-capacity /usr/local/bin/janitor-capacity
WORKDIR /janitor
