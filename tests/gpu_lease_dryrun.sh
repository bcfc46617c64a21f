#!/usr/bin/env bash
# The GPU lease end to end without a GPU: scripts/gpu_bundle.sh packs the EMULATOR build, and
# scripts/gpu_lease.sh --dry-run runs every step from that archive inside a mount namespace where
# this machine's Open MPI (libraries, plugins, mpirun, /etc/openmpi) and every library the build
# and Open MPI load beyond glibc, the GCC runtime and zlib are hidden (bind mounts over them), as
# on a bare CUDA image. Checks:
# the hiding works (the build's own shardlab no longer loads, no system mpirun); the lease's
# libraries all come from the bundle and its mpirun runs; an injected failure and an injected hang
# (killed by its step's timeout) do not stop the later steps; absent tools (nvidia-smi,
# compute-sanitizer, PyTorch) are SKIP, not failures; $OUT holds at most 8 files, named as the
# device tool accepts, at most 2 folders deep; the summary is the output's end; `--only STEP`
# re-runs one step. Needs root (unshare -m): otherwise exit 77, which CTest lists as skipped.
# Usage: gpu_lease_dryrun.sh BUILD_EMU_DIR
set -euo pipefail
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "skipped: needs root (unshare -m, mount --bind)"; exit 77; }
unshare -m true 2>/dev/null || { echo "skipped: unshare -m is not permitted here"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 64 MiB: CI's emulator build is instrumented (ASan + UBSan), larger than the real bundle.
"$repo/scripts/gpu_bundle.sh" --build "$build" --out "$work/bundle" --debs "$build/gpu_bundle_debs" --fast \
  --max-mib 64
archive=$work/bundle/shardlab-gpu.tar.gz
# What to hide, found without trusting the bundle: the system files the bundle copied
# (lib/ORIGINS.txt) and, independently, this machine's ldd closure of the build's binaries and of
# its Open MPI (programs and plugins), minus what a bare CUDA image has too (glibc, the GCC
# runtime, zlib).
provided='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libz)\.so'
{
  tar -xzf "$archive" -O shardlab-gpu/lib/ORIGINS.txt | awk '{print $2}'
  for f in "$build/shardlab" "$build/tests/test_cuda_ops" /usr/bin/orterun /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so \
    /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so; do
    [ -e "$f" ] && ldd "$f" 2>/dev/null
  done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | grep -Ev "$provided" | awk '{print $2}' | xargs -r realpath
} | grep -v '^/usr/lib/x86_64-linux-gnu/\(openmpi\|pmix2\)/' | sort -u > "$work/hide"

# Inside the namespace: hide, prove it is hidden, run the lease (an injected failure and hang).
cat > "$work/inside.sh" <<'SH'
set -uo pipefail
build=$1 archive=$2 work=$3 repo=$4
mount --make-rprivate /
mkdir -p "$work/empty"
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /etc/openmpi /usr/share/openmpi \
  /usr/include/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/openmpi/include; do
  [ -d "$d" ] && mount --bind "$work/empty" "$d"
done
for f in /usr/bin/orterun /usr/bin/orted /usr/bin/mpirun /usr/bin/mpiexec /usr/bin/mpicxx /usr/bin/mpicc; do
  [ -e "$f" ] && mount --bind /dev/null "$(realpath "$f")"
done
while read -r path; do mount --bind /dev/null "$path"; done < "$work/hide"
if mpirun --version >/dev/null 2>&1; then echo "FAIL: the system's mpirun still runs"; exit 1; fi
# A hidden library reads as empty: the loader stops at the first ("file too short").
if "$build/shardlab" --help >/dev/null 2>&1; then echo "FAIL: the system libraries are not hidden"; exit 1; fi
echo "hidden: Open MPI, mpirun and $(wc -l < "$work/hide") system libraries; the build's own shardlab: $("$build/shardlab" --help 2>&1 | head -1)"
export LEASE_WORK=$work/lease LEASE_OPS_FILTER='CudaOps.Gelu*:CudaOps.CrossEntropy*:CudaOps.AdamW*'
OUT=$work/out LEASE_INJECT="memcheck=fail eager=hang" LEASE_LIMITS="eager=3" \
  "$repo/scripts/gpu_lease.sh" --dry-run --bundle "$archive" > "$work/lease.txt" 2>&1
echo "lease exit $?" >> "$work/lease.txt"
OUT=$work/out_only "$repo/scripts/gpu_lease.sh" --dry-run --bundle "$archive" --only bench --budget 75 > "$work/only.txt" 2>&1
echo "lease --only exit $?" >> "$work/only.txt"
SH
unshare -m bash "$work/inside.sh" "$build" "$archive" "$work" "$repo"
cat "$work/lease.txt"

grep -q "^lease exit 1$" "$work/lease.txt" || fail "the lease should exit 1 (an injected failure)"
# The output ends with the summary, exactly.
n=$(wc -l < "$work/out/summary.md")
head -n -1 "$work/lease.txt" | tail -n "$n" | cmp -s - "$work/out/summary.md" || fail "the output does not end with summary.md"
# $OUT as the device tool returns it.
python3 - "$work/out" "$work/lease" <<'PY'
import json, os, re, sys, tarfile
out, lease = sys.argv[1], sys.argv[2]
files = [os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs]
assert 0 < len(files) <= 8, files
for f in files:
    parts = f.split("/")
    assert len(parts) <= 3, f"{f}: more than 2 folders deep"
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", p) for p in parts), f"{f}: a name the tool refuses"
print("$OUT:", ", ".join(f"{f} ({os.path.getsize(os.path.join(out, f)):,} B)" for f in sorted(files)))
r = json.load(open(os.path.join(out, "results.json")))
st = {s["step"]: (s["status"], s["result"]) for s in r["steps"]}
want = {"env": "ok", "ops": "ok", "train": "ok", "bench": "ok", "attention": "ok", "trace": "ok", "time": "ok",
        "eager": "TIMEOUT", "llama": "ok",
        "memcheck": "FAIL (3)", "racecheck": "SKIP", "profile": "SKIP", "compile": "SKIP"}
for step, status in want.items():
    assert st[step][0] == status, f"{step}: {st[step]}, expected {status}"
assert "nvidia-smi absent (skipped)" in st["env"][1] and "mpirun from the bundle: yes" in st["env"][1], st["env"]
assert "MISSING" not in st["env"][1], st["env"]
assert "compute-sanitizer absent" in st["racecheck"][1], st["racecheck"]
assert "PyTorch" in st["compile"][1], st["compile"]
assert "ncu absent" in st["profile"][1], st["profile"]
assert "killed after 3 s" in st["eager"][1], st["eager"]
assert st["ops"][1].endswith("passed") and not st["ops"][1].startswith("0 "), st["ops"]
assert "0 failed" in st["train"][1], st["train"]
assert all(r[k]["tokens_per_s"] > 0 for k in ("bench_257", "bench_320", "bench_320_mma",
                                              "bench_320_mma_regs", "bench_320_mma_wide")), r
# The default runs are auto's (hd 16: every kernel has its forms), the chosen forms in their line.
assert r["bench_320"]["flash_kernels"].startswith("auto: forward "), r["bench_320"]
assert re.search(r"V=320 auto: [0-9.]+ ms, [0-9,]+ tok/s \[forward mma[a-z_]*, dK/dV", st["bench"][1]), st["bench"]
assert all(f"V=320 {f}:" in st["bench"][1] for f in ("mma", "mma_regs", "mma_wide")), st["bench"]
# Flash attention alone on each tensor-core variant (the emulator's: the same kernels' code), its
# passes timed apart; PyTorch here has no CUDA, so its peer says so rather than failing the step.
for flash in ("auto", "mma", "mma_regs", "mma_wide", "wmma"):
    a = r[f"attention_{flash}"]
    named = a["flash_kernels"].startswith("auto: forward ") if flash == "auto" else a["flash_kernels"] == flash
    assert named and a["precision"] == "bf16", a
    assert all(a[k] > 0 for k in ("flash_forward_ms", "flash_backward_ms", "materialize_forward_ms",
                                  "materialize_backward_ms", "flash_forward_tflops")), a
    assert re.search(flash + r": forward [0-9.]+ ms \([0-9.]+ TFLOP/s\), backward", st["attention"][1]), st["attention"]
assert "PyTorch SDPA: no PyTorch with CUDA here" in st["attention"][1], st["attention"]
# The time model's prediction beside the measured step, and the rates the calibration measured.
assert re.search(r"^step predicted [0-9.]+ / measured [0-9.]+ ms \([+-][0-9]+%\); predicted GEMM [0-9.]+, "
                 r"attention [0-9.]+, memory-bound [0-9.]+, AdamW [0-9.]+ ms; calibrated: GEMM bf16 [0-9.]+ [kMGT]?FLOP/s, "
                 r"flash forward [0-9.]+ [kMGT]?FLOP/s, backward [0-9.]+ [kMGT]?FLOP/s, memory-bound [0-9.]+ [kMGT]?B/s$",
                 st["time"][1]), st["time"]
assert re.search(r"^train: loss [0-9.]+ -> [0-9.]+; bench: [0-9.]+ ms", st["llama"][1]), st["llama"]
assert r["bench_llama"]["tokens_per_s"] > 0, r
names = tarfile.open(os.path.join(out, "lease-logs.tar.gz")).getnames()
for f in ("logs/env.log", "logs/ops.log", "logs/train.log", "logs/trace.json", "logs/trace_ops.md", "logs/steps.tsv"):
    assert f in names, f"{f} not in the logs tarball: {names}"
env_log = tarfile.open(os.path.join(out, "lease-logs.tar.gz")).extractfile("logs/env.log").read().decode()
mpirun = re.search(r"== mpirun: (\S+)", env_log).group(1)
assert mpirun.startswith(lease + "/shardlab-gpu/mpi/"), f"mpirun {mpirun} is not the bundle's"
print("ok: every step as expected; mpirun", mpirun)
r = json.load(open(os.path.join(out.replace("/out", "/out_only"), "results.json")))
assert [(s["step"], s["status"]) for s in r["steps"]] == [("bench", "ok")], r["steps"]
print("ok: --only bench ran bench alone")
PY
grep -q "^lease --only exit 0$" "$work/only.txt" || { cat "$work/only.txt"; fail "--only bench failed"; }
echo "gpu_lease_dryrun: ok"
