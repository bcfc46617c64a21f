#!/usr/bin/env python3
"""Every byte of a rank explained (issue 22, item 5), the full matrix: for a model preset, at
N = 1, 2, 4 ranks, ZeRO stages 0-3, optimizer offload off and on, every rank's max RSS in each
phase (init, training, end) beside the report's explained_peak_bytes. Prints a markdown table (one
row per configuration: the worst rank's deviation per phase, and the run's max RSS and
explanation) and says whether every phase of every rank is within --tolerance.
tests/resident_check.py holds the same in CTest for the tiny presets and a GPT-2 subset.
Usage: bench/resident_matrix.py [--build build-emu] [--preset gpt2] [--ranks 1,2,4]
       [--tolerance 0.05] [--json OUT.json] [-- EXTRA TRAIN FLAGS]
(default flags: --precision bf16 --micro-batch 1 --seq 64 --steps 2)"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PHASES = ["init", "training", "end"]


def run(tmp, build, preset, ranks, zero, offload, extra):
    out = os.path.join(tmp, f"n{ranks}z{zero}o{int(offload)}")
    cmd = [os.path.join(ROOT, "launch/mpirun_local.sh"), "-np", str(ranks),
           os.path.join(ROOT, build, "shardlab"), "train", "--preset", preset, "--zero", str(zero),
           "--quiet", "--out", out, "--overwrite", *extra] + (["--offload"] if offload else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return cmd, json.load(open(os.path.join(out, "report.json")))


def worst(rep):
    """Per phase, the rank whose max RSS deviates most from its explanation: (deviation, rss)."""
    out = {}
    for ph in PHASES:
        devs = []
        for r in rep["ranks"]:
            p = r["resident"]["phases"][ph]
            rss, expl = p["rss_peak_bytes"], p["explained_peak_bytes"]
            devs.append(((rss - expl) / expl, rss, expl))
        out[ph] = max(devs, key=lambda d: abs(d[0]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-emu")
    ap.add_argument("--preset", default="gpt2")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--json")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    extra = a.extra or ["--precision", "bf16", "--micro-batch", "1", "--seq", "64", "--steps", "2"]
    rows, bad = [], 0
    print(f"| N | ZeRO | offload | init | training | end | run's max RSS | explained |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in [int(x) for x in a.ranks.split(",")]:
            for zero in range(4):
                for offload in [False, True]:
                    cmd, rep = run(tmp, a.build, a.preset, ranks, zero, offload, extra)
                    w = worst(rep)
                    bad += sum(abs(w[ph][0]) > a.tolerance for ph in PHASES)
                    peak = max(r["resident"]["peak_bytes"] for r in rep["ranks"])
                    expl = max(r["resident"]["explained_peak_bytes"] for r in rep["ranks"])
                    rows.append({"ranks": ranks, "zero": zero, "offload": offload,
                                 "command": " ".join(cmd[:3] + ["shardlab"] + cmd[4:]),
                                 "phases": {ph: {"deviation": w[ph][0], "rss": w[ph][1],
                                                 "explained": w[ph][2]} for ph in PHASES}})
                    print(f"| {ranks} | {zero} | {'on' if offload else 'off'} | "
                          + " | ".join(f"{100 * w[ph][0]:+.2f}%" for ph in PHASES)
                          + f" | {peak / 1e9:.3f} GB | {expl / 1e9:.3f} GB |", flush=True)
    if a.json:
        json.dump({"preset": a.preset, "flags": extra, "tolerance": a.tolerance, "rows": rows},
                  open(a.json, "w"), indent=1)
    print(f"\n{bad} phase(s) outside {100 * a.tolerance:.0f}%" if bad else
          f"\nevery phase of every rank within {100 * a.tolerance:.0f}%")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
