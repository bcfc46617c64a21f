#!/usr/bin/env bash
# `shardlab bench step --peer pytorch` end to end on a toy model: the JSON carries both peers'
# figures, ratio = ours / theirs, GFLOP/s = the FLOP formula over the true V (recomputed here) /
# the median step, a measured GEMM rate and path; the peer runs the padded V shardlab's GEMMs run
# (200 -> 256), its BLAS on the same thread count and with OpenBLAS's own kernel for this CPU (run
# here with OPENBLAS_CORETYPE=Haswell inherited, which the peer must drop); the plot script turns
# the lines into a PNG; a bad --peer and an interpreter without torch are clear errors (exit 2).
# Usage: bench_step_peer_check.sh SHARDLAB EXPECT_FAILURE
set -euo pipefail
shardlab=$1 expect=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=(--layers 2 --hidden 64 --heads 4 --vocab 200 --seq 64 --batch 2 --threads 1)
for p in fp32 bf16; do
  OPENBLAS_CORETYPE=Haswell "$shardlab" bench step "${model[@]}" --precision $p --steps 2 --warmup 1 --peer pytorch \
    --python /usr/bin/python3 --json | sed 's/^{/{"model":"tiny",/' >> "$work/rows.jsonl"
done
/usr/bin/python3 - "$work/rows.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    for k in ("tokens_per_s", "peer_tokens_per_s", "ratio", "gflops", "gemm_peak_gflops",
              "gemm_path", "peer", "cpu"):
        assert k in r, f"missing {k}: {r}"
    assert r["peer"].startswith("pytorch"), r["peer"]
    assert abs(r["ratio"] - r["tokens_per_s"] / r["peer_tokens_per_s"]) < 1e-9 * r["ratio"]
    assert (r["vocab"], r["padded_vocab"], r["peer_vocab"]) == (200, 256, 256), r
    blas = r["peer_blas"]
    if blas is not None:  # torch built on OpenBLAS (Debian's)
        assert blas["threads"] == 1 and blas["dropped_openblas_coretype"] == "Haswell", blas
    assert r["peer_adamw"] == "foreach", r
    L, d, V, T = 2, 64, 200, 64
    flops = 6 * (L * 12 * d * d + V * d) + 6 * L * T * d  # per token
    want = flops * r["tokens_per_s"] / 1e9
    assert abs(r["gflops"] - want) < 1e-6 * want, (r["gflops"], want)
    assert r["gemm_peak_gflops"] > 0 and r["gemm_path"], r
    print(f"ok: {r['precision']}: {r['tokens_per_s']:.0f} vs {r['peer_tokens_per_s']:.0f} tokens/s, "
          f"{r['gflops']:.2f} GFLOP/s, GEMM {r['gemm_peak_gflops']:.1f} via {r['gemm_path']}; "
          f"peer's BLAS {blas}")
PY
/usr/bin/python3 "$here/../tools/plot_step_bench.py" "$work/rows.jsonl" "$work/plot.png"
head -c 8 "$work/plot.png" | od -An -tx1 | grep -q "89 50 4e 47 0d 0a 1a 0a" || { echo "not a PNG"; exit 1; }
"$expect" 2 "use none or pytorch" "$shardlab" bench step "${model[@]}" --steps 1 --peer tensorflow
"$expect" 2 "is torch installed for it" "$shardlab" bench step "${model[@]}" --steps 1 \
  --peer pytorch --python /bin/false
echo "bench step --peer pytorch: ok"
