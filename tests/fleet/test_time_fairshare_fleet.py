"""Time-based fair share on the real KAI with a real Prometheus (exercises/time-fairshare.yaml): the queue that used
the GPUs gets the smaller fair share — and without the usage database the same floods split evenly, so the
lesson's expectation fails there."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request

from kailab.paths import EXERCISES
from kailab.runtimes import usage_db

LESSON = EXERCISES / "time-fairshare.yaml"
USAGE_LINE = "  - schedulerConfig: {kValue: 1, usageParams: {windowSize: 1m, halfLifePeriod: 30s, fetchInterval: 5s}}\n"


def _run(lab, *args: str) -> dict:
    proc = lab.cli(*args, "--json")
    assert proc.stdout, proc.stderr[-3000:]
    verdicts = json.loads(proc.stdout)["verdicts"]
    assert len(verdicts) == 1, proc.stderr[-3000:]
    return verdicts[0]


def _query(url: str, promql: str) -> list[dict]:
    with urllib.request.urlopen(f"{url}/api/v1/query?query={urllib.parse.quote(promql)}", timeout=5) as r:
        return json.loads(r.read())["data"]["result"]


def test_the_queue_that_used_the_gpus_gets_less_of_them_next(kai_lab):
    """The lesson on the real KAI and a real Prometheus; while it runs, `kailab explain` on team-early's workload
    sees the usage KAI publishes and names the runbook of "my queue gets less than its weight" (after the run the
    lab's scheduler is back to its defaults, without usage)."""
    seen: list[dict] = []
    with kai_lab.running("demo", "time-fairshare", "--json") as run:
        while run.poll() is None and not seen:
            proc = kai_lab.cli("explain", "early-flood", "-n", "kailab-time-fairshare", "--json")
            found = json.loads(proc.stdout) if proc.returncode == 0 else []
            seen = [e for e in found if e["runbook"] == "runbooks/time-based-fairshare.md"]
            time.sleep(1)
        out, err = run.communicate(timeout=600)
    (verdict,) = json.loads(out or "{}")["verdicts"]
    rows = {c["title"]: c for c in verdict["checks"]}
    assert verdict["passed"], [(c["title"], c["expected"], c["observed"]) for c in verdict["checks"]] + [err[-2000:]]
    early = rows["team-early, which used the GPUs, gets the smaller fair share"]
    late = rows["team-late, which did not, the larger"]
    assert float(early["observed"]) < float(late["observed"])  # equal weights, yet not 16 and 16
    assert seen, "kailab explain never named the time-based fair share runbook while the lesson ran"
    assert any("kai_queue_gpu_usage" in d for d in seen[0]["details"]), seen[0]
    # The usage KAI read came from the lab's real Prometheus, which scraped KAI's queue-controller.
    processes = kai_lab.runtime.kai_processes
    assert processes.pid(usage_db.PROCESS_NAME) is not None
    url = (processes.root / usage_db.PROCESS_NAME / "url").read_text().strip()
    held = _query(url, 'max_over_time(kai_queue_allocated_gpus{queue_name="team-early"}[5m])')
    assert held and float(held[0]["value"][1]) == 32  # team-early's whole-fleet phase is on record


def test_without_the_usage_database_the_same_floods_split_evenly(kai_lab, tmp_path):
    """The FAIL case: the lesson with kValue but no usageParams. Past usage counts for nothing, each queue's fair
    share is 16, and the lesson's expectation does not hold."""
    text = LESSON.read_text()
    assert text.count(USAGE_LINE) == 1  # the one line this case changes
    assert text.count("    timeout: 60s\n  # Phase 3") == 1  # and the phase-2 check's wait
    scenario = tmp_path / "time-fairshare-off.yaml"
    scenario.write_text(
        text.replace("name: time-fairshare\n", "name: time-fairshare-off\n", 1)
        .replace("lesson: exercises/time-fairshare.md\n", "")
        .replace(USAGE_LINE, "  - schedulerConfig: {kValue: 1}\n")
        .replace("  - sleep: 60\n", "  - sleep: 10\n")  # no usage is recorded: the minute would change nothing
        # the even split is KAI's first answer once both floods wait: the phase-2 check need not wait a whole minute
        .replace("    timeout: 60s\n  # Phase 3", "    timeout: 20s\n  # Phase 3")
    )
    verdict = _run(kai_lab, "run", str(scenario))
    rows = {c["title"]: c for c in verdict["checks"]}
    assert not verdict["passed"]
    assert rows["team-early, which used the GPUs, gets the smaller fair share"]["observed"] == "16"
    assert rows["team-late, which did not, the larger"]["observed"] == "16"
