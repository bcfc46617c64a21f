"""tools/sass_loops.py on a hand-written nvdisasm listing: a kernel with a loop of known size and
mix (a scheduling placeholder `@!PT` and the padding's branch to itself not counted), another
kernel that the name filter must leave out, and the basic blocks of --blocks. CI has no nvdisasm
(tools/sass.sh fetches it), so the parser is held to this fixture: the counts docs/DECISIONS.md
quotes come from it."""
import subprocess
import sys
import tempfile

LISTING = """
\t.headerflags\t@"EF_CUDA_SM90"

//--------------------- .text._Z4loopPf --------------------------
\t.section\t.text._Z4loopPf,"ax",@progbits
_Z4loopPf:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
.L_x_1:
        /*0020*/                   LDSM.16.M88.4 R4, [R2] ;
        /*0030*/                   HMMA.16816.F32.BF16 R8, R4, R6, R8 ;
        /*0040*/              @!PT LDS RZ, [RZ] ;
        /*0050*/                   HMMA.16816.F32.BF16 R12, R4, R6, R12 ;
        /*0060*/                   MUFU.EX2 R3, R3 ;
        /*0070*/                   ISETP.GE.AND P0, PT, R0, 0x10, PT ;
        /*0080*/               @!P0 BRA `(.L_x_1) ;
        /*0090*/                   STG.E [R2.64], R8 ;
        /*00a0*/                   EXIT ;
.L_x_2:
        /*00b0*/                   BRA `(.L_x_2);

//--------------------- .text._Z5otherv --------------------------
\t.section\t.text._Z5otherv,"ax",@progbits
_Z5otherv:
        /*0000*/                   EXIT ;
"""

with tempfile.NamedTemporaryFile("w", suffix=".sass", delete=False) as f:
    f.write(LISTING)
tool = sys.argv[1]
out = subprocess.run([sys.executable, tool, f.name, "loop(", "--blocks"], capture_output=True,
                     text=True, check=True).stdout
print(out)
lines = out.splitlines()
assert lines[0] == "== loop: 11 instructions", lines[0]  # 12 listed, less the placeholder
assert "other" not in out, "the name filter let another kernel through"
loops = [l for l in lines if l.lstrip().startswith("loop ")]
assert len(loops) == 1, f"one loop (the padding's branch to itself is none): {loops}"
assert loops[0].split(":")[1].startswith(" 6 instructions"), loops[0]
for want in ("HMMA 2", "LDSM 1", "MUFU 1", "ISETP 1", "BRA 1"):
    assert want in loops[0], f"{want} missing from {loops[0]}"
assert "LDS" not in loops[0].replace("LDSM", ""), "the @!PT placeholder was counted"
blocks = [l.split() for l in lines if "0x00" in l and not l.lstrip().startswith("loop")]
sizes = [int(b[2]) if b[0].startswith(".L_x") else int(b[1]) for b in blocks]
# Blocks start at labels and after unconditional branches and exits (not after a conditional
# branch: the loop's block runs on to the EXIT).
assert sizes == [2, 8, 1], f"basic blocks: {sizes}"
print("sass_loops: ok")
