"""What the ZeRO training checks of both families share (tests/zero_train_check.py for GPT-2,
tests/llama_zero_check.py for a Llama): running `shardlab train` under `mpirun -np K` and reading
its report, recording failed checks, the ring's bytes per step from a model's unit sizes, and a
checkpoint resumed bitwise. Each script brings its model's flags and unit sizes.

`ZeroRuns.check(cond, what)` records a failure and goes on; the script exits 1 at the end if any."""
import json
import os
import subprocess
import sys


class ZeroRuns:
    def __init__(self, k, shardlab, mpirun, model):
        self.k, self.shardlab, self.mpirun, self.model = k, shardlab, mpirun, model
        self.failures = []

    def run(self, args, out):
        """`shardlab train MODEL ARGS` on K ranks into `out`: its report.json (exits on failure)."""
        cmd = self.mpirun + ["-np", str(self.k), self.shardlab, "train", *self.model, "--quiet",
                             "--out", out, *args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
        return json.load(open(os.path.join(out, "report.json")))

    def check(self, cond, what):
        if not cond:
            self.failures.append(what)
            print("FAIL:", what)

    def padded(self, n):
        """A unit of n elements as the engine stores it: padded to a multiple of K."""
        return (n + self.k - 1) // self.k * self.k

    def expected_bytes_sent(self, units, gathered_once, zero, rank, steps, scalars=2):
        """Bytes a rank sends in `steps` steps of 16-bit units (padded sizes; docs/MEMORY.md):
        stages 0-2 reduce-scatter and all-gather every unit once a step, 2 (K-1)/K sum(P_u) 2 B;
        stage 3 gathers each unit for forward and again for backward and reduce-scatters it,
        (K-1)/K (3 sum(P_u) - sum(gathered_once)) 2 B, where `gathered_once` are the units whose
        backward needs no second gather (they stay gathered, or their backward reads no
        parameter). Plus `scalars` one-float all-reduces a step (the loss, the norm)."""
        k = self.k
        frac = lambda n: n * (k - 1) // k  # elements of one unit a ring rank sends in one RS or AG
        if zero <= 2:
            per_step = sum(2 * frac(p) * 2 for p in units)
        else:
            per_step = (3 * sum(frac(p) for p in units) - sum(frac(p) for p in gathered_once)) * 2
        # one-float all-reduces: rank 0 holds the element: RS sends 4 - c(r), AG sends 4 - c(r+1)
        c = lambda r: 4 if r % k == 0 else 0
        per_scalar = (4 - c(rank)) + (4 - c(rank + 1)) if k > 1 else 0
        return steps * (per_step + scalars * per_scalar)

    def resume_bitwise(self, args, straight_dir, halves_dir, steps=6, stop=3):
        """`steps` steps straight, or stopped after `stop` (a checkpoint there) and resumed in
        place: the resumed steps' numbers, their losses and the final weights' hash must be the
        uninterrupted run's, bit for bit. Returns the losses of the resumed steps."""
        run_args = args + ["--steps", str(steps)]
        straight = self.run(run_args, straight_dir)
        self.run(run_args + ["--save-every", str(stop), "--stop-after", str(stop)], halves_dir)
        resumed = self.run(run_args + ["--resume", halves_dir], halves_dir)
        tail = [s["loss"] for s in straight["steps"]][stop:]
        numbers = [s["step"] for s in resumed["steps"]]
        self.check(numbers == list(range(stop + 1, steps + 1)), f"resumed steps {numbers}")
        self.check([s["loss"] for s in resumed["steps"]] == tail,
                   f"resumed losses {resumed['steps']} vs {tail}")
        self.check(resumed["final_params_sha256"] == straight["final_params_sha256"],
                   "resumed final weights differ")
        return tail
