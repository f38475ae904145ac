#!/usr/bin/env bash
# Throughput of one Lambda invocation at several memory sizes, measured on
# this machine: the real bootstrap under aws-lambda-rie, each invocation in
# a cgroup whose CPU quota is Lambda's share for the size (memory/1769 MB of
# one CPU), against the in-repo Iggy broker, the local S3 and moto_server on
# loopback. Prints the Markdown table the README's Scaling section quotes.
#
# Needs root on Linux (cgroup v1 or v2 CPU controller) and the test tools
# (`make tools py-tools`). Flags go to the Go program, e.g.:
#   scripts/sizing.sh -sizes 256,1024,1769 -compression none,zstd -messages 600000 -timeout 60s
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory tools py-tools >&2
exec go run ./scripts/sizing "$@"
