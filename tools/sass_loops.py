"""Where a kernel's instructions go, from its SASS (tools/sass.sh writes it): for each kernel whose
demangled name contains KERNEL, its size, then each loop (a branch back to an earlier label) with
its instruction count and mix, largest first; with --blocks, its basic blocks in order, each with
its size, the instructions that matter most for a flash kernel (HMMA: mma, LDSM: ldmatrix, MUFU:
ex2 and other special functions, LDGSTS: cp.async, BAR: barriers) and where it branches. A loop
that holds a tile's work says what a tile costs per warp, beside its mma calls.

    python3 tools/sass_loops.py build-sass/flash_attention_mma.sass \\
        "mma_backward_kv_kernel<64, false, 1, 2, __nv_bfloat16>" [--blocks]"""
import argparse
import collections
import re
import subprocess

KEY = ("HMMA", "LDSM", "MUFU", "LDS", "LDGSTS", "BAR", "SHFL", "STG", "WARPSYNC")
INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*);")
LABEL = re.compile(r"\s*(\.L_x_\d+):")
TARGET = re.compile(r"`\((\.L_x_\d+)\)")


def kernels(text):
    """(demangled name, body) of each kernel in nvdisasm -c output."""
    parts = re.split(r"\n\s*//-+ \.text\.(\S+) -+\n", text)
    names = parts[1::2]
    demangled = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                               text=True, check=True).stdout.splitlines()
    for name, body in zip(demangled, parts[2::2]):
        yield name.replace("shardlab::cuda::(anonymous namespace)::", ""), body


def parse(body):
    """The instructions [(address, opcode, operands, predicate)] and each label's index."""
    ins, labels = [], {}
    for line in body.splitlines():
        m = LABEL.match(line)
        if m:
            labels[m.group(1)] = len(ins)
            continue
        m = INSTR.match(line)
        if m and (m.group(2) or "").strip() != "@!PT":  # predicated never: a placeholder
            ins.append((int(m.group(1), 16), m.group(3), m.group(4), (m.group(2) or "").strip()))
    return ins, labels


def mix(ins):
    return collections.Counter(op.split(".")[0] for _, op, _, _ in ins)


def loops(ins, labels):
    """(first, last) index of each loop: a branch back to a label at or before it."""
    found = []
    for k, (_, op, rest, _) in enumerate(ins):
        m = TARGET.search(rest) if op.startswith("BRA") else None
        if m and labels.get(m.group(1), len(ins)) < k:  # not the padding's branch to itself
            found.append((labels[m.group(1)], k))
    return sorted(found, key=lambda lo_hi: lo_hi[0] - lo_hi[1])


def blocks(ins, labels):
    """Basic blocks: split at labels and after unconditional branches."""
    starts = sorted(set(labels.values()) | {0} | {
        k + 1 for k, (_, op, _, pred) in enumerate(ins)
        if op.startswith(("BRA", "EXIT", "RET")) and not pred})
    starts = [s for s in starts if s < len(ins)] + [len(ins)]
    name_of = {v: k for k, v in labels.items()}
    for a, b in zip(starts, starts[1:]):
        yield name_of.get(a, ""), ins[a:b]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sass")
    ap.add_argument("kernel", help="a part of the demangled kernel name")
    ap.add_argument("--loops", type=int, default=4, help="the largest N loops")
    ap.add_argument("--blocks", action="store_true", help="also list the basic blocks")
    args = ap.parse_args()
    for name, body in kernels(open(args.sass).read()):
        if args.kernel not in name:
            continue
        ins, labels = parse(body)
        print(f"== {name.split('(')[0]}: {len(ins)} instructions")
        for lo, hi in loops(ins, labels)[:args.loops]:
            c = mix(ins[lo:hi + 1])
            print(f"  loop {ins[lo][0]:#07x}..{ins[hi][0]:#07x}: {hi - lo + 1} instructions, "
                  + ", ".join(f"{k} {v}" for k, v in c.most_common(16)))
        if args.blocks:
            for label, bl in blocks(ins, labels):
                c = mix(bl)
                keys = " ".join(f"{k} {c[k]}" for k in KEY if c[k])
                to = [TARGET.search(r).group(1) for _, op, r, _ in bl
                      if op.startswith("BRA") and TARGET.search(r)]
                print(f"  {label:>10} {bl[0][0]:#07x} {len(bl):4d}  {keys:44s} -> {' '.join(to)}")


if __name__ == "__main__":
    main()
