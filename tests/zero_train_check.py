#!/usr/bin/env python3
"""ZeRO training end to end under `mpirun -np K` (one CTest case per K):
  1. stages 0/1/2/3 x offload x checkpointing (and ZeRO-3 with --prefetch 1, 2), grad-accum 1:
     bitwise-identical losses and final
     weights (sha256 of the consolidated fp32 master);
  2. on every rank, measured bytes equal the prediction for params, grads, master, optimizer,
     activations, comm buffers, workspace (CTest runs these on OpenBLAS, whose workspace the plan
     models: the prediction must be there) and host, and bytes sent per collective equal the
     prediction;
  3. bytes sent per step recomputed here from the unit sizes and the ring formulas
     (docs/MEMORY.md), independently of the C++ plan: stages 0-2 2(N-1)/N*sum(P_u)*2 B,
     stage 3 (N-1)/N*(3*sum(P_u) - P_lnf)*2 B, plus the scalar all-reduces;
  4. grad-accum 2 (fp32): stages agree within a tolerance (rounding order differs);
  5. resume from a checkpoint continues bitwise;
  2b. per link class too (intra_node / inter_node), measured == predicted on every rank, with the
     configurations' node layouts cycling through every --ranks-per-node that divides K and the
     detected one (one node here); and independently: a flat ring rank sends all its bytes to
     rank+1, so its whole bytes_sent is in the class of that one link, the other class is 0;
  6. the report's time split (compute + exposed communication = the step) and per-phase peaks
     (init, forward, backward, step: the largest of them is the run's device peak, and the
     caching allocators reserved at least that).
Usage: zero_train_check.py K SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import json
import os
import subprocess
import sys
import tempfile

from report_expect import TINY_MODEL, TINY_SHAPE, measured_equals_predicted

K = int(sys.argv[1])
SHARDLAB = sys.argv[2]
MPIRUN = sys.argv[3:]
MODEL = TINY_MODEL
L, D, T, V = TINY_SHAPE
failures = []


def run(args, out):
    cmd = MPIRUN + ["-np", str(K), SHARDLAB, "train", *MODEL, "--quiet", "--out", out, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return json.load(open(os.path.join(out, "report.json")))


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def padded(n):
    return (n + K - 1) // K * K


def expected_bytes_sent(zero, rank, steps, scalars=2):
    units = [padded(V * D + T * D)] + [padded(12 * D * D + 13 * D)] * L + [padded(2 * D)]
    frac = lambda n: n * (K - 1) // K  # elements of one unit a ring rank sends in one RS or AG
    if zero <= 2:
        per_step = sum(2 * frac(p) * 2 for p in units)
    else:
        per_step = (3 * sum(frac(p) for p in units) - frac(units[-1])) * 2
    # one-float all-reduces: rank 0 holds the element: RS sends 4 - c(r), AG sends 4 - c(r+1)
    c = lambda r: 4 if r % K == 0 else 0
    per_scalar = (4 - c(rank)) + (4 - c(rank + 1)) if K > 1 else 0
    return steps * (per_step + scalars * per_scalar)


with tempfile.TemporaryDirectory() as tmp:
    steps = 5
    base = ["--micro-batch", "2", "--steps", str(steps), "--precision", "bf16", "--lr", "3e-3", "--warmup", "2"]
    reference = None
    configs = [(z, off, ck, 0) for z in range(4) for off in (False, True) for ck in ("none", "all")]
    configs += [(3, False, "none", 1), (3, True, "every:2", 2)]  # ZeRO-3 gathering ahead
    # Node layouts: blocks of every divisor of K, and None (detected: one node, as mpirun here).
    layouts = [k for k in range(1, K + 1) if K % k == 0] + [None]
    link_classes = set()  # (class, nonzero) seen, to show both classes were exercised
    for i, (zero, offload, ck, prefetch) in enumerate(configs):
        per_node = layouts[i % len(layouts)]
        name = f"zero{zero}{'-offload' if offload else ''}-ck{ck}" + (f"-prefetch{prefetch}" if prefetch else "")
        args = base + ["--zero", str(zero), "--checkpoint", ck, "--prefetch", str(prefetch)] + (["--offload"] if offload else [])
        if per_node:
            name += f"-x{per_node}"
            args += ["--ranks-per-node", str(per_node)]
        rep = run(args, os.path.join(tmp, name))
        losses = [s["loss"] for s in rep["steps"]]
        sig = (losses, rep["final_params_sha256"])
        if reference is None:
            reference = (name, sig)
        check(sig == reference[1], f"{name}: losses/weights differ from {reference[0]}: {losses} vs {reference[1][0]}")
        for r in rep["ranks"]:
            measured_equals_predicted(check, name, r)
            if os.environ.get("SHARDLAB_GEMM") == "openblas":
                check(r["memory"]["workspace"]["predicted_bytes"] is not None,
                      f"{name} rank {r['rank']}: no workspace predicted on OpenBLAS")
            total = 0
            for op, s in r["comm"].items():
                total += s["bytes_sent"]
                link, pred = s["bytes_by_link"], s["predicted_bytes_by_link"]
                check(link == pred, f"{name} rank {r['rank']} {op}: by link {link} predicted {pred}")
                node = lambda q: q // per_node if per_node else 0
                cls = "intra_node" if node(r["rank"]) == node((r["rank"] + 1) % K) else "inter_node"
                other = "inter_node" if cls == "intra_node" else "intra_node"
                check(link[cls] == s["bytes_sent"] and link[other] == 0,
                      f"{name} rank {r['rank']} {op}: the ring's link to rank+1 is {cls}, yet {link}")
                link_classes |= {c for c in ("intra_node", "inter_node") if link[c] > 0}
            want = expected_bytes_sent(zero, r["rank"], steps)
            check(total == want, f"{name} rank {r['rank']}: {total} bytes sent, formula says {want}")
            hd = r["host_device_bytes"]
            check(hd["total"] == hd["predicted"], f"{name} rank {r['rank']}: offload copies {hd}")
            check((hd["total"] > 0) == offload, f"{name}: offload copies present iff --offload")
            t = r["time"]
            check(t["steps"] == steps and 0 <= t["exposed_comm_seconds"] <= t["step_seconds"]
                  and abs(t["compute_seconds"] + t["exposed_comm_seconds"] - t["step_seconds"]) < 1e-9,
                  f"{name} rank {r['rank']}: time split {t}")
            phases = r["phases"]
            check({"init", "forward", "backward", "step"} <= set(phases), f"{name}: phases {sorted(phases)}")
            device_peak = r["memory"]["device_total"]["peak_bytes"]
            check(max(p["peak_bytes"] for p in phases.values()) == device_peak,
                  f"{name} rank {r['rank']}: phase peaks {phases} vs device peak {device_peak}")
            check(r["reserved"]["device_peak_bytes"] >= device_peak, f"{name}: reserved {r['reserved']}")
        for s in rep["steps"]:
            check(abs(s["compute_ms"] + s["exposed_comm_ms"] - s["ms"]) < 1e-6, f"{name}: step row {s}")
    print(f"ok: {len(configs)} configurations on {K} rank(s): identical losses {reference[1][0]}")
    want_classes = {"intra_node", "inter_node"} if K > 1 else set()
    check(link_classes == want_classes, f"link classes with bytes: {link_classes}, want {want_classes}")
    print(f"ok: bytes by link class measured == predicted on every rank, layouts x{layouts}")

    # Gradient accumulation: the stages round in different places; fp32 keeps that small.
    acc = ["--micro-batch", "1", "--grad-accum", "2", "--steps", "4", "--precision", "fp32", "--lr", "3e-3"]
    runs = {z: [s["loss"] for s in run(acc + ["--zero", str(z)], os.path.join(tmp, f"acc{z}"))["steps"]] for z in range(4)}
    for z in range(1, 4):
        worst = max(abs(a - b) / abs(b) for a, b in zip(runs[z], runs[0]))
        check(worst < 1e-5, f"grad-accum 2, zero {z} vs 0: relative loss difference {worst:.2e} >= 1e-5")
    print(f"ok: grad-accum 2, stages within 1e-5 of each other: {runs[0]}")

    # Resume: 6 steps straight, or stopped after 3 and resumed — the same bits.
    six = base[:2] + ["--steps", "6"] + base[4:] + ["--zero", "3", "--offload"]
    straight = run(six, os.path.join(tmp, "straight"))
    halves = os.path.join(tmp, "halves")
    run(six + ["--save-every", "3", "--stop-after", "3"], halves)
    resumed = run(six + ["--resume", halves], halves)
    tail = [s["loss"] for s in straight["steps"]][3:]
    check([s["step"] for s in resumed["steps"]] == [4, 5, 6], f"resumed steps {[s['step'] for s in resumed['steps']]}")
    check([s["loss"] for s in resumed["steps"]] == tail, f"resumed losses {resumed['steps']} vs {tail}")
    check(resumed["final_params_sha256"] == straight["final_params_sha256"], "resumed final weights differ")
    print(f"ok: stopped after 3 steps and resumed: losses {tail} and final weights bitwise equal")
sys.exit(1 if failures else 0)
