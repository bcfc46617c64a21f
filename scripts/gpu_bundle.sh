#!/usr/bin/env bash
# Packs what a lent GPU machine needs to run shardlab's GPU checks without building anything there
# (docs/GPU.md): the CUDA build's `shardlab` and `test_cuda_ops` (stripped), the scripts the lease
# runs, every shared library they and Open MPI load that a bare CUDA image lacks (the ldd closure
# minus glibc, libstdc++/libgcc_s, zlib and the CUDA driver/toolkit/NCCL, which the machine has),
# and Debian's Open MPI + PMIx tree (`apt-get download` + `dpkg -x`) with the `mpirun` links
# Debian makes in postinst — into ONE archive, at most 52 MiB, that a device `run` carries (64 MiB
# in all with the working tree's tracked files, 5 MiB in November 2026).
# Prints the archive's size and the newest glibc symbol version the binaries need.
#
# Usage: scripts/gpu_bundle.sh [--build DIR] [--out DIR] [--debs DIR] [--fast] [--max-mib N]
#   --build DIR  the build to pack (default build/, the real CUDA build of scripts/build.sh);
#                an emulator build (build-emu/) gives the bundle the dry run uses
#   --out DIR    where shardlab-gpu.tar.gz goes (default gpu_bundle/, git-ignored)
#   --debs DIR   cache of the downloaded .debs (default OUT/debs); when apt-get download fails
#                (offline) and the cache is empty, the installed packages' files (dpkg -L) are
#                copied instead, the same files dpkg -x would give, and MANIFEST.md says so
#   --fast       gzip -4 instead of -9 (the dry run: seconds of CPU matter there; -1 left CI's
#                sanitizer-instrumented bundle over 64 MiB, -4 packs it 8% smaller in 3 s)
#   --max-mib N  refuse an archive over N MiB (default 52, this bundle's budget; the dry run of
#                CI's sanitizer-instrumented emulator build allows 64, the device tool's carry)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build=build out=gpu_bundle debs= level=9 max_mib=52
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --debs) debs=$2; shift 2 ;;
    --fast) level=4; shift ;;
    --max-mib) max_mib=$2; shift 2 ;;
    *) echo "gpu_bundle: unknown argument $1 (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done
out=$(realpath -m "$out")
debs=$(realpath -m "${debs:-$out/debs}")
build=$(realpath "$build")
say() { echo "gpu_bundle: $*"; }
die() { echo "gpu_bundle: $*" >&2; exit 1; }

# --- what is packed, and what kind of build it is ---------------------------------------------
bins=(shardlab tests/test_cuda_ops)
for b in "${bins[@]}"; do [ -x "$build/$b" ] || die "$build/$b is missing: build it first (scripts/build.sh, or scripts/build_emu.sh for the dry run)"; done
if grep -q '^SHARDLAB_CUDA:STRING=EMU' "$build/CMakeCache.txt"; then
  kind=emulator
else
  kind=cuda
  ldd "$build/shardlab" | grep -q libnccl || die "$build/shardlab is not a CUDA build (no NCCL in ldd): configure with -DSHARDLAB_CUDA=ON"
  # cuBLAS is opened when the CUDA backend starts (dlopen), so ldd does not list it: the build
  # wrote its sonames down.
  dlopened=$(cat "$build/dlopened.txt") || die "$build/dlopened.txt is missing: reconfigure the build (cmake $build)"
  # The machine code in the binary (cuobjdump), or, where the toolkit here has no cuobjdump, what
  # the build told nvcc to generate (build.ninja's --generate-code ... code=[compute_90,sm_90]).
  if command -v cuobjdump >/dev/null; then
    archs=$(cuobjdump --list-elf "$build/tests/test_cuda_ops" 2>/dev/null | grep -o 'sm_[0-9]*a\?' | sort -u | tr '\n' ' ' || true)
  else
    archs="$( (grep -o 'code=\[[^]]*\]' "$build/build.ninja" 2>/dev/null || true) | grep -o 'sm_[0-9]*a\?' | sort -u | tr '\n' ' ')(build.ninja)"
  fi
  case " $archs " in *"sm_90 "* | *"sm_90a "*) ;; *) die "no sm_90 code in test_cuda_ops (found: ${archs:-none}); Hopper needs it" ;; esac
fi
# Open MPI and PMIx as Debian ships them; everything else they load comes from the ldd closure.
mpi_pkgs=(openmpi-bin openmpi-common libopenmpi3 libpmix2)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/shardlab-gpu
mkdir -p "$root"/{bin,lib,mpi,tools,tests,scripts}

# --- 1. binaries, stripped (symbols are not needed on the lease; the build keeps them) ---------
for b in "${bins[@]}"; do
  strip --strip-unneeded -o "$root/bin/$(basename "$b")" "$build/$b"
done
cp tests/cuda_train_check.py tests/report_expect.py "$root/tests/"
cp tools/torch_bench_step.py tools/torch_bench_attention.py tools/trace_ops.py tools/roofline.py \
  tools/paper_model.py "$root/tools/"
cp scripts/gpu_lease.sh "$root/scripts/"

# --- 2. Open MPI: the .debs unpacked, plus the links Debian's postinst makes -------------------
mkdir -p "$debs"
mpi_source="apt-get download + dpkg -x"
missing=()
for p in "${mpi_pkgs[@]}"; do ls "$debs/${p}_"*.deb >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  (cd "$debs" && apt-get download "${missing[@]}" >/dev/null 2>&1) || true
fi
if ls "$debs"/*.deb >/dev/null 2>&1 && [ "$(ls "$debs"/*.deb | wc -l)" -ge ${#mpi_pkgs[@]} ]; then
  for f in "$debs"/*.deb; do dpkg -x "$f" "$root/mpi"; done
  mpi_versions=$(for f in "$debs"/*.deb; do basename "$f" .deb; done | tr '\n' ' ')
else
  mpi_source="offline: the installed packages' files (dpkg -L), as dpkg -x would unpack them"
  for p in "${mpi_pkgs[@]}"; do
    dpkg -L "$p" | while read -r f; do
      [ -f "$f" ] || [ -L "$f" ] || continue
      mkdir -p "$root/mpi$(dirname "$f")"
      cp -a "$f" "$root/mpi$f"
    done
  done
  mpi_versions=$(dpkg-query -W -f='${Package}_${Version} ' "${mpi_pkgs[@]}")
fi
P=$root/mpi/usr
A=$P/lib/x86_64-linux-gnu
[ -x "$P/bin/mpirun.openmpi" ] || die "no mpirun.openmpi in the unpacked Open MPI"
for l in mpirun mpiexec; do ln -sf "$l.openmpi" "$P/bin/$l"; done # Debian's postinst: update-alternatives
rm -rf "$root/mpi/usr/share/doc" "$root/mpi/usr/share/man"

# --- 3. the library closure: every ELF file packed, resolved against the bundle first ----------
# What the GPU machine has (Ubuntu 24.04's CUDA image): glibc, the GCC runtime (newer there), zlib,
# the driver, the toolkit's cuBLAS / cudart, and NCCL from the PyTorch venv.
provided='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libz|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia-ml)\.so'
bundle_path=$root/lib:$A:$A/openmpi/lib:$A/pmix2/lib
elfs() { python3 -c 'import os, sys
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        p = os.path.join(d, f)
        if not os.path.islink(p) and open(p, "rb").read(4) == b"\x7fELF": print(p)' "$root"; }
# ldd lists the transitive closure, so one pass over every ELF file finds every library needed.
elfs | while read -r f; do echo "== $f"; LD_LIBRARY_PATH=$bundle_path ldd "$f" 2>/dev/null; done > "$stage/ldd"
awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' "$stage/ldd" | sort -u | while read -r name path; do
  [[ $name =~ $provided ]] && continue
  case $path in "$root"/*) continue ;; esac
  [ -e "$root/lib/$name" ] || cp -L "$path" "$root/lib/$name"
  echo "$name $(realpath "$path")"
done | sort -u > "$root/lib/ORIGINS.txt" # which system file each came from (the dry run hides them)
# Nothing may stay unresolved except what the machine provides.
unresolved=$(awk '/^== / {f = $2} /not found/ {print f ": " $1}' "$stage/ldd" | grep -Ev ": $provided" || true)
[ -z "$unresolved" ] || die "unresolved libraries: $unresolved"

# --- 4. glibc / libstdc++ symbol versions against the GPU machine's (Ubuntu 24.04) -------------
maxver() { elfs | xargs objdump -T 2>/dev/null | grep -o "$1_[0-9.]*" | sort -u -V | tail -1; }
need_glibc=$(maxver GLIBC) need_glibcxx=$(maxver GLIBCXX)
device_glibc=2.39 device_glibcxx=GLIBCXX_3.4.33 # Ubuntu 24.04: glibc 2.39, GCC 14's libstdc++
[ "$(printf '%s\n' "${need_glibc#GLIBC_}" "$device_glibc" | sort -V | tail -1)" = "$device_glibc" ] ||
  die "the binaries need $need_glibc, newer than the GPU machine's glibc $device_glibc"
[ "$(printf '%s\n' "$need_glibcxx" "$device_glibcxx" | sort -V | tail -1)" = "$device_glibcxx" ] ||
  die "the binaries need $need_glibcxx, newer than the GPU machine's $device_glibcxx"

# --- 5. the environment, relocatable: env.sh finds its own folder ------------------------------
cat > "$root/env.sh" <<'ENV'
# Sourced by scripts/gpu_lease.sh: the bundle's binaries, libraries and relocated Open MPI / PMIx.
B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
P=$B/mpi/usr
A=$P/lib/x86_64-linux-gnu
export PATH=$B/bin:$P/bin:$PATH
export LD_LIBRARY_PATH=$B/lib:$A/openmpi/lib:$A/pmix2/lib:$A${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_PREFIX=$P OPAL_EXEC_PREFIX=$P OPAL_BINDIR=$P/bin OPAL_LIBDIR=$A/openmpi/lib
export OPAL_INCLUDEDIR=$A/openmpi/include OPAL_PKGLIBDIR=$A/openmpi/lib/openmpi3 OPAL_DATADIR=$P/share
export OPAL_DATAROOTDIR=$P/share OPAL_PKGDATADIR=$P/share/openmpi OPAL_SYSCONFDIR=$B/mpi/etc/openmpi
export PMIX_PREFIX=$A/pmix2 PMIX_DATADIR=$A/pmix2/share PMIX_PKGDATADIR=$A/pmix2/share/pmix
# PMIx does not derive its plugin folder from PMIX_PREFIX, and Debian's pmix-mca-params.conf names
# /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix: without these it finds no pcompress component (a
# warning per process) or, where the machine has a PMIx of its own there, loads that one's plugin.
export PMIX_EXEC_PREFIX=$A/pmix2 PMIX_LIBDIR=$A/pmix2/lib PMIX_PKGLIBDIR=$A/pmix2/lib/pmix
export PMIX_MCA_mca_base_component_path=$A/pmix2/lib/pmix
# The MPI settings the tests use (tests/CMakeLists.txt's SHARDLAB_MPI_ENV).
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader
ENV

# --- 6. manifest and archive --------------------------------------------------------------------
commit=$(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet HEAD -- . ':!gpu_bundle' || echo -dirty)
{
  echo "# shardlab GPU lease bundle"
  echo
  echo "- build: $build ($kind), commit $commit, packed $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  [ "$kind" = cuda ] && echo "- GPU code in test_cuda_ops: $archs"
  echo "- needs at most $need_glibc (GPU machine: Ubuntu 24.04, glibc $device_glibc) and $need_glibcxx (there: $device_glibcxx): ok"
  echo "- Open MPI / PMIx: $mpi_source: $mpi_versions"
  echo "- from the GPU machine, not packed: glibc, libstdc++, libgcc_s, zlib, libcuda (driver), cuBLAS/cuBLASLt (CUDA toolkit), NCCL (the PyTorch venv's nvidia/nccl/lib)"
  [ "$kind" = cuda ] && echo "- opened at run time, from the GPU machine: $dlopened"
  echo "- packed libraries ($(ls "$root/lib" | grep -c '\.so')): $(ls "$root/lib" | grep '\.so' | tr '\n' ' ')"
} > "$root/MANIFEST.md"
mkdir -p "$out"
archive=$out/shardlab-gpu.tar.gz
tar -C "$stage" -cf - shardlab-gpu | gzip -"$level" > "$archive.tmp"
mv "$archive.tmp" "$archive"
bytes=$(stat -c %s "$archive")
limit=$((max_mib << 20))
cat "$root/MANIFEST.md"
say "$archive: $((bytes / 1024)) KiB ($(du -sh "$root" | cut -f1) unpacked)"
[ "$bytes" -le "$limit" ] || die "the archive is $bytes bytes, over the $max_mib MiB limit"
