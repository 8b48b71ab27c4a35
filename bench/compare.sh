#!/usr/bin/env bash
# ckpt against git, zstd and a plain write+fsync, in one run: see bench/README.md.
#   bench/compare.sh [--quick] [--reps N] [--markdown] [--only GROUP] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./bench/compare "$@"
