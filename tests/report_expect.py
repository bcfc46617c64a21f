"""What the training tests ask of every rank of a run's report.json (tests/zero_train_check.py,
hybrid_train_check.py, cuda_train_check.py), and the small model they train.

`check(cond, what)` is the caller's: it records a failure and goes on."""

# A model small enough for multi-rank runs in CI: 2 blocks, d = 64, 4 heads, T = 32, V = 256.
TINY_MODEL = ["--layers", "2", "--hidden", "64", "--heads", "4", "--seq", "32", "--vocab", "256"]
TINY_SHAPE = (2, 64, 32, 256)  # L, D, T, V


def measured_equals_predicted(check, name, rank):
    """One rank's memory per category and each collective's bytes and calls equal the plan's."""
    r = rank["rank"]
    for cat, m in rank["memory"].items():
        if m["predicted_bytes"] is not None:
            check(m["peak_bytes"] == m["predicted_bytes"],
                  f"{name} rank {r} {cat}: measured {m['peak_bytes']} predicted {m['predicted_bytes']}")
    for op, s in rank["comm"].items():
        check(s["bytes_sent"] == s["predicted_bytes"] and s["calls"] == s["predicted_calls"],
              f"{name} rank {r} {op}: sent {s['bytes_sent']} in {s['calls']} calls, "
              f"predicted {s['predicted_bytes']} in {s['predicted_calls']}")
