#!/usr/bin/env python3
"""Checks a `shardlab collectives bench --json` file: every documented key, no wrong elements,
and each ring row's bytes_sent_per_rank equal to the formulas of docs/COLLECTIVES.md, recomputed
here independently of the C++ (native rows report null: MPI's internal traffic is not visible)."""
import json
import sys

KEYS = {"op", "algo", "dtype", "ranks", "bytes", "count", "time_us", "algbw_gbps", "busbw_gbps",
        "wrong", "bytes_sent_per_rank", "bytes_by_link_per_rank", "predicted_bytes_by_link_per_rank"}


def chunk_bytes(count, n, j, es):
    j %= n
    return (count // n + (1 if j < count % n else 0)) * es


def expected_sent(op, count, n, r, root, es):
    if n == 1:
        return 0
    S = count * es
    c = lambda j: chunk_bytes(count, n, j, es)
    return {
        "allgather": S - c(r + 1),
        "reduce_scatter": S - c(r),
        "allreduce": 2 * S - c(r) - c(r + 1),
        "broadcast": (S - c(root) if r == root else 0) + S - c(r + 1),
        "reduce": S - c(r) + (0 if r == root else c(r)),
        "gather": 0 if r == root else c(r),
        "scatter": S - c(root) if r == root else 0,
    }[op]


def main(path, ranks):
    rows = json.load(open(path))
    assert rows, "no rows"
    for row in rows:
        assert set(row) == KEYS, f"keys {sorted(row)} != {sorted(KEYS)}"
        assert row["ranks"] == ranks, row
        assert row["wrong"] == 0, row
        es = {"fp32": 4, "bf16": 2, "fp16": 2}[row["dtype"]]
        assert row["bytes"] == row["count"] * es, row
        assert row["time_us"] > 0 and row["algbw_gbps"] > 0 and row["busbw_gbps"] > 0, row
        if row["algo"] == "native":
            assert row["bytes_sent_per_rank"] is None, row
            assert row["bytes_by_link_per_rank"] is None, row
            continue
        links = row["bytes_by_link_per_rank"]
        assert links == row["predicted_bytes_by_link_per_rank"], row
        assert [b["intra_node"] + b["inter_node"] for b in links] == row["bytes_sent_per_rank"], row
        if row["algo"] != "ring":
            continue  # hd / hier: comm_model's schedule, held against the measured bytes above
        want = [expected_sent(row["op"], row["count"], ranks, r, 0, es) for r in range(ranks)]
        assert row["bytes_sent_per_rank"] == want, (row, want)
    print(f"ok: {len(rows)} rows checked")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
