# syntax=docker/dockerfile:1
#
# Larder in a container: built with the official Swift image, run on Debian slim.
#
#   docker build -t larder .
#   docker run --rm -p 8080:8080 -v larder-data:/data -e LARDER_TOKEN=secret larder
#
# Both stages are Debian 12 (bookworm), so the binary runs on the glibc it was
# linked against. The Swift runtime is linked in statically; the binary needs
# only libc, libstdc++, libgcc_s, zlib and libpq (the postgres store) at run
# time, and what libpq5 pulls in (`ldd` on a release build). docker/check-offline.sh checks every command here without a Docker
# engine; see docs/docker.md.

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
# target's path).
COPY Tests ./Tests
COPY Fuzz/Harness ./Fuzz/Harness
RUN swift build -c release --static-swift-stdlib --product larder \
    && install -D -m 0755 .build/release/larder /out/larder \
    && strip /out/larder

# ---- run --------------------------------------------------------------------
FROM ${RUNTIME_IMAGE}
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get -q update \
    && apt-get -q install -y --no-install-recommends zlib1g libpq5 libstdc++6 libgcc-s1 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --user-group --uid 10001 --home-dir /nonexistent --no-create-home \
               --shell /usr/sbin/nologin larder \
    && mkdir -p /data \
    && chown larder:larder /data
# The viewer is in the binary (the EmbedViewer plugin built Public/ into it):
# no copy of Public/ here, and no LARDER_PUBLIC_DIR to drift from it.
COPY --from=build /out/larder /usr/local/bin/larder
ENV LARDER_HOST=0.0.0.0 \
    LARDER_PORT=8080 \
    LARDER_DATA_DIR=/data
# A named volume starts as a copy of /data here, owned by larder.
VOLUME /data
EXPOSE 8080
# Numeric, so that a runtime can tell it is not root (Kubernetes' runAsNonRoot).
USER 10001:10001
WORKDIR /data
# `larder healthcheck` GETs http://127.0.0.1:$LARDER_PORT/healthz (no curl here).
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["larder", "healthcheck", "--timeout", "4"]
ENTRYPOINT ["larder"]
CMD ["serve"]
