#!/usr/bin/env bash
# Installs what shardlab needs from Debian's packages, then configures and builds.
# Idempotent: when everything is present it installs nothing and says nothing but the build.
# Usage: scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git clang-format iproute2 ccache
  openmpi-bin libopenmpi-dev libopenblas-dev libopenblas-openmp-dev libdnnl-dev
  libgtest-dev libgmock-dev libboost-context-dev
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libfmt-dev libssl-dev
  python3 python3-numpy python3-matplotlib python3-torch
  clang libclang-rt-14-dev llvm-14
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} Debian package(s): ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ "${1:-}" = "--no-build" ] && exit 0
exec scripts/build.sh
