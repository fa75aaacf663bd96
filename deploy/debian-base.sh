#!/usr/bin/env bash
# Make a base image for the app's build where no registry is reachable (no Docker Hub, no registry mirror):
# Debian 12 with Python 3.11 and its venv module, from a Debian package mirror, with debootstrap, imported into the
# local Docker engine. Then:  docker build --build-arg BASE_IMAGE=attnviz-base:bookworm ...
#
#   sudo bash deploy/debian-base.sh [TAG]          # TAG: attnviz-base:bookworm
#
# Needs root, debootstrap (Debian: apt-get install debootstrap) and a Docker engine. DEBIAN_MIRROR sets the package
# mirror (http://deb.debian.org/debian). The image is about 170 MB; python:3.11-slim is about 130 MB.
set -euo pipefail
tag="${1:-attnviz-base:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
command -v debootstrap >/dev/null || { echo "debian-base: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
command -v docker >/dev/null || { echo "debian-base: needs docker and a running Docker engine" >&2; exit 1; }
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT

debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$root" "$mirror" >&2
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' - "$tag" >/dev/null
docker run --rm "$tag" python3 -c 'import sys, venv, ensurepip; assert sys.version_info[:2] == (3, 11), sys.version'
echo "debian-base: $tag ($(docker image inspect --format '{{.Size}}' "$tag" | awk '{printf "%d MB", $1 / 1e6}'))"
