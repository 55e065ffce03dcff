#!/usr/bin/env bash
# Larder's S3 face against moto's server mode on this machine, with one boto3
# client for both (Benchmarks/s3_vs_moto.py does the measuring): 1 KiB
# PutObject and GetObject per second on 1 client and on 8 threads, a 64 MiB
# file's upload and download MB/s through boto3's upload_file/download_file
# (multipart and ranged, threaded), the time from start to the first answer,
# and resident memory after the run. The servers run one after the other, never both at once.
# First the same loops and transfers run against nginx answering every request at
# once with a fixed answer: the ceiling boto3 itself reaches on this
# machine, which the second table measures each server against.
#
#   bash Benchmarks/s3-vs-moto.sh            # about 2 minutes; the figures docs/s3.md quotes
#   bash Benchmarks/s3-vs-moto.sh --quick    # short runs, an 8 MiB object: checks the script works
#
# LARDER=path uses that binary instead of building .build/release/larder
# (SKIP_BUILD=1 uses the one there as it is). Installs moto[server] and boto3
# with pip, and nginx with apt-get, when they are missing. The table goes to stdout and to
# .build/benchmarks/s3-vs-moto-<date>.txt. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
QUICK=()
for arg in "$@"; do
  case $arg in
    --quick) QUICK=(--quick) ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
  esac
done

. "$ROOT/Benchmarks/common.sh"
release_larder

python3 -c "import boto3, moto.server, flask, flask_cors" 2>/dev/null || {
  echo "pip installing boto3 'moto[server]'" >&2
  python3 -m pip install -q boto3 'moto[server]'
}

command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || {
  echo "apt-get installing nginx (the ceiling run)" >&2
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nginx >/dev/null
}

OUTDIR=$ROOT/.build/benchmarks
mkdir -p "$OUTDIR"
python3 "$ROOT/Benchmarks/s3_vs_moto.py" --larder "$LARDER" "${QUICK[@]}" \
  --out "$OUTDIR/s3-vs-moto-$(date -u +%Y-%m-%dT%H%M%SZ)${QUICK:+-quick}.txt"
