"""What the training tests ask of every rank of a run's report.json (tests/zero_train_check.py,
hybrid_train_check.py, cuda_train_check.py, llama_zero_check.py, reproducible_check.py), and the
small models they train with their units' sizes (Hugging Face shapes, unpadded).

`check(cond, what)` is the caller's: it records a failure and goes on."""

# A model small enough for multi-rank runs in CI: 2 blocks, d = 64, 4 heads, T = 32, V = 256.
TINY_MODEL = ["--layers", "2", "--hidden", "64", "--heads", "4", "--seq", "32", "--vocab", "256"]
TINY_SHAPE = (2, 64, 32, 256)  # L, D, T, V
# Its Llama: grouped-query attention (4 query heads over 2 KV heads), SwiGLU 96 wide (not 4 D),
# an untied head.
TINY_LLAMA_SHAPE = (2, 64, 4, 2, 96, 32, 256)  # L, D, H, H_kv, F, T, V
TINY_LLAMA_MODEL = ["--arch", "llama", "--preset", "tiny-llama", "--layers", "2", "--hidden", "64",
                    "--heads", "4", "--kv-heads", "2", "--ffn", "96", "--seq", "32",
                    "--vocab", "256"]


def gpt2_units(L, D, T, V):
    """wte + wpe, the blocks (12 D^2 weights, 13 D biases and norms), the final layer norm."""
    return [V * D + T * D] + [12 * D * D + 13 * D] * L + [2 * D]


def llama_units(L, D, H, HKV, F, T, V):
    """embed_tokens [V, D]; per layer two norms, q, k, v, o, gate, up, down; model.norm + lm_head."""
    kv = D // H * HKV
    return [V * D] + [2 * D + D * D + 2 * kv * D + D * D + 3 * D * F] * L + [D + V * D]


def measured_equals_predicted(check, name, rank):
    """One rank's memory per category, each collective's bytes and calls, and the offload copies'
    bytes equal the plan's."""
    r = rank["rank"]
    for cat, m in rank["memory"].items():
        if m["predicted_bytes"] is not None:
            check(m["peak_bytes"] == m["predicted_bytes"],
                  f"{name} rank {r} {cat}: measured {m['peak_bytes']} predicted {m['predicted_bytes']}")
    for op, s in rank["comm"].items():
        check(s["bytes_sent"] == s["predicted_bytes"] and s["calls"] == s["predicted_calls"],
              f"{name} rank {r} {op}: sent {s['bytes_sent']} in {s['calls']} calls, "
              f"predicted {s['predicted_bytes']} in {s['predicted_calls']}")
    hd = rank["host_device_bytes"]
    check(hd["total"] == hd["predicted"],
          f"{name} rank {r} offload copies: {hd['total']} bytes, predicted {hd['predicted']}")
