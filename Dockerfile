# Multi-stage build: compile with the Rust toolchain, run on a slim Debian with only the binary.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY playground ./playground
COPY benches ./benches
COPY schema.graphql ./
RUN cargo build --release --locked --bin dynapage

FROM debian:bookworm-slim
# curl serves the compose healthcheck; ca-certificates lets the AWS SDK reach real endpoints.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/dynapage /usr/local/bin/dynapage
# The durable embedded store's directory (`serve --data-dir /data`, compose profile `box`): a
# named volume mounted here takes this owner and mode, so the unprivileged user can write it
# and nobody else can read it.
RUN mkdir -p /data && chown 10001 /data && chmod 700 /data
USER 10001
EXPOSE 8080
ENTRYPOINT ["dynapage"]
CMD ["serve", "--listen=0.0.0.0:8080"]
