#!/usr/bin/env bash
# The anchor for the block-transfer figures: UCX's own one-sided GET bandwidth between two
# processes of this machine, over shared memory and over TCP (1 MiB GETs).
#
# Uses Debian's ucx-utils (installed here if missing; needs root and apt). The libucx-cu11
# wheel's own ucx_perftest does not start on this kind of machine; its libraries work.
set -euo pipefail

if ! command -v ucx_perftest >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ucx-utils >/dev/null
fi
SIZE=${SIZE:-1048576}
ITERS=${ITERS:-2000}
for tls in "posix,cma,self" "tcp,self"; do
  port=$((13337 + RANDOM % 1000))
  UCX_TLS=$tls ucx_perftest -p "$port" >/dev/null 2>&1 &
  server=$!
  until ss -ltn | grep -q ":$port "; do sleep 0.1; done  # the server is listening
  echo "== UCX_TLS=$tls, ucp_get, $SIZE-byte messages"
  UCX_TLS=$tls ucx_perftest localhost -p "$port" -t ucp_get -s "$SIZE" -n "$ITERS" | tail -n 3
  wait "$server" || true
done
