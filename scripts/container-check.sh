#!/usr/bin/env bash
# Opt-in: build the project's image with podman (no Docker engine here) and
# check that a three-container swarm delivers events. Needs root and the
# Debian package mirror; takes a few minutes. See ../shared/ENVIRONMENT.md.
#   bash scripts/container-check.sh [LOG_DIR]     (default runs/container-check)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-runs/container-check}"
[ "$(id -u)" = 0 ] || { echo "run as root (podman rootful, debootstrap)" >&2; exit 1; }

if ! command -v podman >/dev/null; then
    echo "installing podman ..." >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        podman buildah runc uidmap fuse-overlayfs slirp4netns debootstrap iptables >/dev/null
fi
mkdir -p /etc/containers
if ! grep -qs 'runtime="runc"' /etc/containers/containers.conf; then
    cat >> /etc/containers/containers.conf <<'CONF'
[containers]
default_ulimits=["nofile=20000:20000","nproc=20000:20000"]
[engine]
runtime="runc"
CONF
fi

# A local stand-in for python:3.11-slim (no registry here): Debian bookworm
# minbase plus its Python 3.11.
if ! podman image exists localhost/vinifera-base:py311; then
    if ! podman image exists localhost/localdeb:bookworm; then
        echo "debootstrap bookworm (minbase) ..." >&2
        rm -rf /tmp/vnf-rootfs
        debootstrap --variant=minbase bookworm /tmp/vnf-rootfs >/dev/null
        tar -C /tmp/vnf-rootfs -c . | podman import - localdeb:bookworm >/dev/null
        rm -rf /tmp/vnf-rootfs
    fi
    echo "building the base image ..." >&2
    printf '%s\n' 'FROM localhost/localdeb:bookworm' \
        'RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pip python3-venv ca-certificates && rm -rf /var/lib/apt/lists/*' \
        'ENV PIP_BREAK_SYSTEM_PACKAGES=1' \
        | podman build --pull=never -t vinifera-base:py311 -f - /tmp >/dev/null
fi

echo "building vinifera:latest from the Dockerfile ..." >&2
podman build --pull=never --build-arg BASE=localhost/vinifera-base:py311 \
    -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
    -t vinifera:latest . >/dev/null
podman run --rm vinifera:latest vinifera-node --version

bash scripts/setup.sh
echo "three-container swarm ..." >&2
rm -rf "$OUT"
VINIFERA_CONTAINER_ENGINE=podman .venv/bin/vinifera swarm up --backend docker --nodes 3 \
    --image localhost/vinifera:latest --duration 20 --events-per-second 2 --period 0.5 \
    --log-dir "$OUT" --json | tee "$OUT.json"
.venv/bin/python - "$OUT.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
ok = m.get("delivered_pairs", 0) > 0 and m["false_positives"] == 0 and m["duplicates"] == 0
print(f"delivered {m.get('delivered_pairs')} of {m.get('expected_pairs')} expected pairs: "
      + ("OK" if ok else "FAILED"))
sys.exit(0 if ok else 1)
PY
