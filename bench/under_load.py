"""Benchmark ``kailab demo all`` on a busy host: the same verdicts as on a quiet one (issue 41).

    python bench/under_load.py [--runs 3] [--cpu N] [--lessons quota,protection]   # a running local lab with KAI

First ``kailab demo all`` on the machine as it is (the quiet run), then ``--runs`` times beside a synthetic CPU load
of ``--cpu`` workers (``stress-ng --cpu N``, Debian's ``stress-ng``; default twice the cores), each the real
command (``kailab demo all --json``, its exit status: 0 all PASS, 1 a FAIL, 3 UNDECIDED). Prints per run: the load,
how busy the lab said it was (``kailab status``), each verdict and, for one that is not PASS, each row that is not,
with its reason; at the end, every FAIL under load (there must be none) and the lessons that PASS quietly.
``--lessons`` runs those lessons side by side in-process instead (kailab.parallel, as ``demo all``
does). Exits 1 if a verdict under load FAILs or one on the quiet machine is not PASS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def kailab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kailab", *args], capture_output=True, text=True)


def demo(lessons: list[str]) -> tuple[int, list[dict], float]:
    """(exit status, verdicts as JSON, seconds) of one run: ``kailab demo all --json``, or the lessons side by side."""
    start = time.monotonic()
    if not lessons:
        proc = kailab("demo", "all", "--json")
        try:
            verdicts = json.loads(proc.stdout)["verdicts"]
        except (ValueError, KeyError):
            raise SystemExit(
                f"kailab demo all gave no verdicts (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
            ) from None
        return proc.returncode, verdicts, time.monotonic() - start
    from kailab.checks import exit_code
    from kailab.fleet import load_fleet
    from kailab.kube import Kube
    from kailab.lab import Lab
    from kailab.parallel import DEFAULT_PARALLEL, SideBySide
    from kailab.progress import Progress

    lab = Lab.open()
    host = lab.capabilities.partitions
    if host is None:
        raise SystemExit("No lab is running: kailab up first.")
    kubeconfig = lab.kubeconfig()
    run = SideBySide(host, load_fleet(), lambda: Kube(kubeconfig), Progress(quiet=True), DEFAULT_PARALLEL, lab.cluster)
    found = run.run(lessons)
    return exit_code(found), [v.to_dict() for v in found], time.monotonic() - start


def busy() -> str:
    """What ``kailab status`` says of the lab's pace now."""
    proc = kailab("status", "--json")
    try:
        said = json.loads(proc.stdout).get("load") or {}
    except ValueError:
        return f"(kailab status: exit {proc.returncode})"
    return f"{said.get('slowdown', '?')}× quiet: {said.get('said', '')}"


def report(name: str, code: int, verdicts: list[dict], seconds: float) -> dict[str, int]:
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v["outcome"]] = counts.get(v["outcome"], 0) + 1
    print(f"{name}: {seconds:.0f} s, exit {code}, load {load()}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    for v in verdicts:
        if v["outcome"] == "PASS":
            continue
        print(f"  {v['scenario']} {v['outcome']} ({v['seconds']:.0f} s){': ' + v['error'] if v.get('error') else ''}")
        for c in v["checks"]:
            if not c["passed"]:
                why = c.get("undecided") or f"expected {c['expected']}, observed {c['observed']}"
                print(f"    {'UNDECIDED' if c.get('undecided') else 'FAIL'} {c['title']}: {why}")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs under load (default 3)")
    parser.add_argument("--cpu", type=int, default=2 * (os.cpu_count() or 1), help="stress-ng CPU workers")
    parser.add_argument("--lessons", default="", help="comma-separated, side by side in-process (default: demo all)")
    parser.add_argument("--no-quiet", action="store_true", help="skip the run on the quiet machine")
    args = parser.parse_args()
    if shutil.which("stress-ng") is None:
        raise SystemExit("stress-ng is not installed: apt-get install stress-ng")
    lessons = [n for n in args.lessons.split(",") if n]
    failed: list[str] = []
    quiet_pass: set[str] = set()
    if not args.no_quiet:
        print(f"quiet: the lab says {busy()}")
        code, verdicts, seconds = demo(lessons)
        report("quiet", code, verdicts, seconds)
        quiet_pass = {v["scenario"] for v in verdicts if v["outcome"] in ("PASS", "NOT APPLICABLE")}
        failed += [f"quiet {v['scenario']} {v['outcome']}" for v in verdicts if v["scenario"] not in quiet_pass]
    undecided = 0
    for i in range(1, args.runs + 1):
        stress = subprocess.Popen(
            ["stress-ng", "--cpu", str(args.cpu), "--timeout", "3600s", "--quiet"], start_new_session=True
        )
        try:
            time.sleep(5)  # the load is on before the run starts
            print(f"run {i} beside stress-ng --cpu {args.cpu}: the lab says {busy()}")
            code, verdicts, seconds = demo(lessons)
        finally:
            os.killpg(stress.pid, signal.SIGTERM)
            stress.wait()
        counts = report(f"run {i}", code, verdicts, seconds)
        undecided += counts.get("UNDECIDED", 0)
        failed += [f"run {i} {v['scenario']}" for v in verdicts if v["outcome"] == "FAIL"]
        time.sleep(10)  # the load's end settles before the next run
    print(
        f"under load: {args.runs} runs, {len(failed)} FAIL, {undecided} UNDECIDED"
        + (f"; quiet: {len(quiet_pass)} PASS" if not args.no_quiet else "")
    )
    if failed:
        print("not as on a quiet machine: " + ", ".join(failed))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
