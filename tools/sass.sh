#!/usr/bin/env bash
# The SASS of a CUDA source file, for counting a kernel's instructions without a GPU:
#   tools/sass.sh model/kernels/cuda/flash_attention_mma.cu [OUT_DIR]
# writes OUT_DIR/NAME.cubin, NAME.ptxas (registers, spills) and NAME.sass (nvdisasm -c): the sm_90
# code the build ships, which ptxas makes from compute_80 PTX (CMakeLists.txt); SASS_ARCH=sm_80
# for the A100's. Then tools/sass_loops.py NAME.sass KERNEL shows its loops.
#
# The CUDA toolkit here (nvcc 13) has no disassembler; Debian's non-free nvidia-cuda-toolkit
# (CUDA 11.8) has nvdisasm. The first run downloads that package into ~/.cache/shardlab/nvdisasm
# with a private apt configuration (the machine's sources are left alone) and keeps only nvdisasm.
# CUDA 13's cubins differ from 11.8's only in the ELF header (ABI version 8, a new e_flags layout),
# so the header is rewritten to the old form before nvdisasm reads it; the code is unchanged.
set -euo pipefail
src=${1:?usage: tools/sass.sh FILE.cu [OUT_DIR]}
out=${2:-build-sass}
arch=${SASS_ARCH:-sm_90}
ptx=compute_80 # the build's PTX for every GPU it compiles SASS for
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/shardlab/nvdisasm
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}

fetch_nvdisasm() {
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  echo "sass.sh: fetching nvdisasm from Debian's nvidia-cuda-toolkit (non-free) into $cache" >&2
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
  local codename
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $codename non-free" > "$tmp/sources.list"
  local opts=(-o Dir::Etc::SourceList="$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache" -o APT::Sandbox::User=root)
  apt-get "${opts[@]}" -qq update
  (cd "$tmp" && apt-get "${opts[@]}" -qq download nvidia-cuda-toolkit)
  dpkg-deb -x "$tmp"/nvidia-cuda-toolkit_*.deb "$tmp/x"
  mkdir -p "$cache"
  cp "$tmp/x/usr/bin/nvdisasm" "$cache/nvdisasm"
}
[ -x "$cache/nvdisasm" ] || fetch_nvdisasm

mkdir -p "$out"
name=$(basename "$src" .cu)
if ! "$nvcc" -DSHARDLAB_HAVE_CUDA=1 -DFMT_SHARED -I"$root" -isystem=/usr/local/cuda/include \
  --generate-code=arch=$ptx,code=$arch -O3 -DNDEBUG --fmad=false -std=c++17 -x cu -cubin "$src" \
  -o "$out/$name.cubin" -Xptxas -v 2> "$out/$name.ptxas"; then
  grep -v '^ptxas info' "$out/$name.ptxas" >&2
  exit 1
fi
python3 - "$out/$name.cubin" "$out/$name.old.cubin" <<'PY'
import struct, sys
elf = bytearray(open(sys.argv[1], "rb").read())
if elf[4] == 2 and elf[8] == 8:  # a 64-bit ELF in the new layout (ABI version 8); else as it is
    sm = (struct.unpack_from("<I", elf, 0x30)[0] >> 8) & 0xFF  # the SM in bits 8-15
    elf[7], elf[8] = 0x33, 7                                   # OS/ABI and ABI version of CUDA 11
    struct.pack_into("<I", elf, 0x30, (sm << 16) | 0x500 | sm)  # virtual SM, 64-bit, unified, SM
open(sys.argv[2], "wb").write(elf)
PY
"$cache/nvdisasm" -c "$out/$name.old.cubin" > "$out/$name.sass"
rm "$out/$name.old.cubin"
echo "$out/$name.sass ($(grep -c '^\s*/\*[0-9a-f]*\*/' "$out/$name.sass") instructions), $out/$name.ptxas"
