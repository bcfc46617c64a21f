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
Run, check, padding, the ring's bytes and the resume are tests/zero_runs.py's, shared with
tests/llama_zero_check.py.
Usage: zero_train_check.py K SHARDLAB MPIRUN [MPIRUN ARGS...]"""
import os
import sys
import tempfile

from report_expect import TINY_MODEL, TINY_SHAPE, gpt2_units, measured_equals_predicted
from zero_runs import ZeroRuns

K = int(sys.argv[1])
runs = ZeroRuns(K, sys.argv[2], sys.argv[3:], TINY_MODEL)
run, check = runs.run, runs.check
UNITS = [runs.padded(u) for u in gpt2_units(*TINY_SHAPE)]


def expected_bytes_sent(zero, rank, steps):
    # At stage 3 the final layer norm is gathered once a step (it stays gathered from the head's
    # forward through its backward).
    return runs.expected_bytes_sent(UNITS, UNITS[-1:], zero, rank, steps)


with tempfile.TemporaryDirectory() as tmp:
    steps = 5
    train_args = ["--micro-batch", "2", "--precision", "bf16", "--lr", "3e-3", "--warmup", "2"]
    base = train_args + ["--steps", str(steps)]
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
    acc_losses = {z: [s["loss"] for s in run(acc + ["--zero", str(z)], os.path.join(tmp, f"acc{z}"))["steps"]] for z in range(4)}
    for z in range(1, 4):
        worst = max(abs(a - b) / abs(b) for a, b in zip(acc_losses[z], acc_losses[0]))
        check(worst < 1e-5, f"grad-accum 2, zero {z} vs 0: relative loss difference {worst:.2e} >= 1e-5")
    print(f"ok: grad-accum 2, stages within 1e-5 of each other: {acc_losses[0]}")

    # fp16 from a loss scale too large: the first steps overflow and are skipped, sending no
    # all-gather of updated parameters and no offload copy; the report predicts the applied ones.
    skip = run(["--micro-batch", "2", "--steps", "6", "--precision", "fp16", "--loss-scale", "1048576",
                "--zero", "1", "--offload"], os.path.join(tmp, "fp16-skipped"))
    for r in skip["ranks"]:
        measured_equals_predicted(check, "fp16-skipped", r)
        check(0 < r["skipped_steps"] < 6, f"fp16-skipped rank {r['rank']}: {r['skipped_steps']} of 6 skipped")
    print(f"ok: fp16, {skip['ranks'][0]['skipped_steps']} of 6 steps skipped: measured == predicted")

    # Resume: 6 steps straight, or stopped after 3 and resumed — the same bits.
    tail = runs.resume_bitwise(train_args + ["--zero", "3", "--offload"],
                               os.path.join(tmp, "straight"), os.path.join(tmp, "halves"))
    print(f"ok: stopped after 3 steps and resumed: losses {tail} and final weights bitwise equal")
sys.exit(1 if runs.failures else 0)
