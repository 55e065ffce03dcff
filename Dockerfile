# syntax=docker/dockerfile:1
#
# Larder in a container: built with the official Swift image; run from an
# empty image holding the binary and the Debian libraries it links, nothing
# else (no shell, no package manager).
#
#   docker build -t larder .
#   docker run --rm -p 127.0.0.1:8080:8080 -v larder-data:/data -e LARDER_TOKEN=secret larder
#
# All stages are Debian 12 (bookworm), so the binary runs on the glibc it was
# linked against. The binary is the one the wheel and the npm package carry
# (packaging/build-binary.sh): the Swift runtime linked in statically, no
# Foundation ICU data, so it needs only libc, libm, libstdc++, libgcc_s and
# zlib at run time; the `files` stage copies exactly what `ldd` names.
# libpq is loaded only by the PostgreSQL store: the default image (the last
# stage) has none, and the `postgres` target adds libpq5 and what it loads
# (about 17 MB):
#
#   docker build --target postgres -t larder:postgres .
#
# Works with Docker 20.10's legacy builder (no BuildKit features).
# Tests/containers builds and runs both for real (docs/docker.md).

# The toolchain of the tests (Swift 6.3); Package.swift asks for 6.0 or later.
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# ---- build ------------------------------------------------------------------
FROM ${SWIFT_IMAGE} AS build
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get -q update \
    && apt-get -q install -y --no-install-recommends zlib1g-dev libpq-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first: a change to the sources does not fetch them again.
COPY Package.swift Package.resolved ./
RUN swift package resolve
COPY Sources ./Sources
# The EmbedViewer plugin builds Public/ into the binary.
COPY Plugins ./Plugins
COPY Public ./Public
# Package.swift names the test targets and the fuzz harness too: their
# folders must be there even for `--product larder` (SwiftPM checks every
# target's path), but not their files, which .dockerignore leaves out (an
# edited test does not rebuild the image; SwiftPM warns that they are empty).
COPY Tests ./Tests
COPY Fuzz/Harness ./Fuzz/Harness
COPY packaging/build-binary.sh ./packaging/build-binary.sh
RUN LARDER_STATIC_SCRATCH=.build bash packaging/build-binary.sh /out

# ---- the runtime's files ----------------------------------------------------
# Debian's runtime packages, then the binary and every library it loads
# (ldd; `not found` fails the build) copied into /rootfs with a passwd entry
# for the unprivileged user and the data folder it owns.
FROM ${RUNTIME_IMAGE} AS files
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get -q update \
    && apt-get -q install -y --no-install-recommends zlib1g libstdc++6 libgcc-s1 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/bin/larder /rootfs/usr/local/bin/larder
RUN set -e; cd /rootfs \
    && ! ldd usr/local/bin/larder | grep 'not found' \
    && for lib in $(ldd usr/local/bin/larder | grep -o '/[^ ]*'); do cp -L --parents "$lib" /rootfs/; done \
    && mkdir -p etc data tmp \
    && printf 'root:x:0:0:root:/root:/sbin/nologin\nlarder:x:10001:10001:larder:/nonexistent:/sbin/nologin\n' > etc/passwd \
    && printf 'root:x:0:\nlarder:x:10001:\n' > etc/group \
    && chown 10001:10001 data && chmod 1777 tmp

# libpq5 and every library it loads that /rootfs does not have yet, in
# /pqroot, for the `postgres` target.
FROM files AS postgres-files
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get -q update \
    && apt-get -q install -y --no-install-recommends libpq5 \
    && rm -rf /var/lib/apt/lists/* \
    && libpq=$(ldconfig -p | awk '/libpq\.so\.5 .*x86-64/ {print $NF; exit}') \
    && ! ldd "$libpq" | grep 'not found' \
    && mkdir /pqroot \
    && for lib in "$libpq" $(ldd "$libpq" | grep -o '/[^ ]*'); do \
         [ -e "/rootfs$lib" ] || cp -L --parents "$lib" /pqroot/; done

# ---- run --------------------------------------------------------------------
# The image: the disk store (and everything but `--store postgres://`).
FROM scratch AS larder
COPY --from=files /rootfs /
# The viewer is in the binary (the EmbedViewer plugin built Public/ into it):
# no copy of Public/ here, and no LARDER_PUBLIC_DIR to drift from it.
ENV LARDER_HOST=0.0.0.0 \
    LARDER_PORT=8080 \
    LARDER_DATA_DIR=/data
# A named volume starts as a copy of /data here, owned by larder.
VOLUME /data
EXPOSE 8080
# Numeric, so that a runtime can tell it is not root (Kubernetes' runAsNonRoot).
USER 10001:10001
WORKDIR /data
# `larder healthcheck` GETs http://127.0.0.1:$LARDER_PORT/healthz (there is
# no curl here). Every second, so that `healthy` follows the server's first
# answer within about a second: Docker runs the first check one interval
# after the start, and Docker 20.10 has no --start-interval (Docker 25 does)
# for a fast start with a slow pace afterwards. A check costs one short
# process; docs/docker.md gives the measured figures.
HEALTHCHECK --interval=1s --timeout=3s --start-period=30s --retries=3 \
    CMD ["larder", "healthcheck", "--timeout", "2"]
ENTRYPOINT ["larder"]
CMD ["serve"]

# ---- postgres: the same, with libpq (`--target postgres`) ------------------
FROM larder AS postgres
COPY --from=postgres-files /pqroot /

# The default target is the last stage: the image without libpq.
FROM larder
