#!/usr/bin/env python3
"""Runs every command of the walkthroughs in examples/*.md, so that they never rot.

A walkthrough shows commands in fenced ```console blocks: a line starting with "$ " is a command
(a line ending in a backslash continues it), the lines after it up to the next command are its
documented output, where a line "..." marks output left out. Each command runs with bash (and
pipefail), in a temporary directory per page (so a page's later commands see its earlier ones'
files), with "build/shardlab" replaced by the shardlab under test, "launch/mpirun_local.sh" by the
test's MPI launcher and "tools/" by the repository's tools/. A command that exits non-zero fails.

An HTML comment before a block checks its output too:
  <!-- check: output -->          every documented output line (whitespace collapsed, "..."
                                   skipped) appears in the real output, in this order: for
                                   deterministic output such as `collectives show`
  <!-- check: contains TEXT -->   the real output holds TEXT (repeatable): for output with
                                   timings in it, a line that must not change

Usage: examples_check.py SHARDLAB MPIRUN... (run from anywhere; the pages are found beside tests/)
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
EXAMPLES = os.path.join(REPO, "examples")


class Command:
    def __init__(self, page, line, text, documented, checks):
        self.page, self.line, self.text = page, line, text
        self.documented, self.checks = documented, checks

    def where(self):
        return f"{self.page}:{self.line}"


def parse_page(path):
    """The page's commands, each with its documented output and the checks of its block."""
    commands, checks, block = [], [], None
    lines = open(path).read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if block is None:
            m = re.match(r"\s*<!--\s*check:\s*(output|contains)\s*(.*?)\s*-->\s*$", line)
            if m:
                checks.append((m.group(1), m.group(2)))
            elif line.startswith("```console"):
                block = {"checks": checks}
                checks = []
            elif line.strip() and not line.startswith("<!--"):
                checks = []  # a check belongs to the block right after it
        elif line.startswith("```"):
            block = None
        elif line.startswith("$ "):
            start, text = i + 1, line[2:]
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            commands.append(Command(os.path.basename(path), start, text, [], block["checks"]))
        elif commands:
            commands[-1].documented.append(line)
        i += 1
    return commands


def squash(s):
    return " ".join(s.split())


def check_output(cmd, output):
    """The reasons the real output breaks the block's checks (none: it holds)."""
    real = [squash(l) for l in output.splitlines()]
    bad = []
    for kind, arg in cmd.checks:
        if kind == "contains" and squash(arg) not in squash(output):
            bad.append(f"the output no longer contains '{arg}'")
        if kind == "output":
            at = 0
            for want in (squash(l) for l in cmd.documented):
                if not want or want == "...":
                    continue
                try:
                    at = real.index(want, at) + 1
                except ValueError:
                    bad.append(f"documented line not in the output (in order): '{want}'")
                    break
    return bad


def substitute(text, shardlab, mpirun):
    text = re.sub(r"(?<![\w/.-])build/shardlab(?![\w/.-])", shlex.quote(shardlab), text)
    text = re.sub(r"(?<![\w/.-])tools/", shlex.quote(os.path.join(REPO, "tools")) + "/", text)
    return re.sub(r"(?<![\w/.-])launch/mpirun_local\.sh(?![\w/.-])",
                  " ".join(shlex.quote(a) for a in mpirun), text)


# The pages' outputs were recorded on the OpenBLAS GEMM path, which `--gemm auto` takes on an AVX2
# CPU; on one with AVX-512 it takes oneDNN, whose GEMM workspace changes a run's device bytes. The
# pages' checks hold on every CPU with the path fixed (examples/README.md says so).
ENV = dict(os.environ, SHARDLAB_GEMM="openblas")


def run_page(path, shardlab, mpirun):
    commands = parse_page(path)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="shardlab-examples-") as work:
        for cmd in commands:
            t0 = time.time()
            line = substitute(cmd.text, shardlab, mpirun)
            try:
                p = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=work, env=ENV,
                                   capture_output=True, text=True, timeout=60)
                output = p.stdout + p.stderr
                bad = [f"exit code {p.returncode}"] if p.returncode != 0 else []
                bad += check_output(cmd, output)
            except subprocess.TimeoutExpired as e:  # a page's command is meant to take seconds
                output = e.stdout or ""
                output = output.decode(errors="replace") if isinstance(output, bytes) else output
                bad = ["still running after 60 s"]
            status = "FAIL" if bad else "ok"
            print(f"{status} {cmd.where()} ({time.time() - t0:.1f} s): $ {cmd.text}")
            if bad:
                failures += 1
                for b in bad:
                    print(f"    {b}")
                print("    output:\n" + "\n".join("      " + l for l in output.splitlines()[-40:]))
    return len(commands), failures


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: examples_check.py SHARDLAB MPIRUN...")
    shardlab, mpirun = os.path.abspath(sys.argv[1]), sys.argv[2:]
    pages = sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".md"))
    total = failures = 0
    t0 = time.time()
    for page in pages:
        n, f = run_page(page, shardlab, mpirun)
        total, failures = total + n, failures + f
    print(f"{total} commands in {len(pages)} pages, {failures} failed, {time.time() - t0:.1f} s")
    if total == 0:
        sys.exit("FAIL: no commands found: are the ```console blocks still there?")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
