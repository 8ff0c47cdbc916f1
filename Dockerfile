# listpipe as a container image for scheduled jobs (Airflow, Kubernetes CronJobs).
#
#   docker build -t listpipe .
#   docker run --rm -v "$PWD:/work" -e LISTPIPE_TOKEN listpipe run pipelines/nightly.toml --resume --report reports/nightly.json
#
# The working directory /work holds the pipelines and `.listpipe/` (journal, ledgers,
# remembered ETags): mount it from a volume so `--resume` and ETag skips work across runs.

# --- build: the release binary, with the versions Cargo.lock pins ---
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY crates ./crates
RUN cargo build --release --locked --bin listpipe

# --- run: a small Debian with CA certificates (https:// sources and targets), non-root ---
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --create-home --home-dir /home/listpipe listpipe \
    && mkdir /work && chown listpipe:listpipe /work
COPY --from=build /src/target/release/listpipe /usr/local/bin/listpipe
USER listpipe
WORKDIR /work
ENTRYPOINT ["listpipe"]
CMD ["--help"]
