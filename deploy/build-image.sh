#!/usr/bin/env bash
# Builds the ktrace container image from the Dockerfile at the top of the
# repository, with docker or podman, whichever is installed:
#
#   deploy/build-image.sh [IMAGE]      (default ktrace:latest)
#
# Without either it builds the same static binary the image holds
# (CGO_ENABLED=0) and says that no image was built.
set -euo pipefail
cd "$(dirname "$0")/.."
image=${1:-ktrace:latest}
for tool in docker podman; do
	if command -v "$tool" >/dev/null 2>&1; then
		exec "$tool" build -t "$image" -f Dockerfile .
	fi
done
out=${KTRACE_STATIC_OUT:-./ktrace}
CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$out" ./cmd/ktrace
echo "build-image: neither docker nor podman is installed: built only the static binary $out" >&2
