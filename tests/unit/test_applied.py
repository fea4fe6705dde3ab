"""``kailab lesson``'s "what kailab applies" block: KAI's lines of the objects the engine applies, as pasteable YAML."""

from __future__ import annotations

import io
import re

import yaml
from rich.console import Console

from kailab.applied import kai_lines
from kailab.paths import EXERCISES
from kailab.render import applied_table
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.prefix import prefixed


def rows(name: str) -> dict[tuple[str, str], object]:
    return {
        (line.obj, line.where): yaml.safe_load(line.what)
        for line in kai_lines(load_scenario(EXERCISES / f"{name}.yaml"))
    }


def test_the_gang_size_is_shown_on_the_job_with_its_queue_priority_and_scheduler():
    r = rows("gang")
    assert r[("Job training", "metadata")] == {
        "labels": {"kai.scheduler/queue": "gang-demo", "priorityClassName": "train"},
        "annotations": {"kai.scheduler/batch-min-member": "10"},
    }  # a string, as Kubernetes wants it
    assert r[("Job training", "spec")] == {"parallelism": 10}
    assert r[("Job training", "spec.template.spec")] == {
        "schedulerName": "kai-scheduler",
        "priorityClassName": "train",
        "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}],
    }
    assert ("Job training", "spec.template.metadata") not in r  # KAI reads the Job's labels, not the template's


def test_queues_show_quota_limit_weight_and_a_later_change():
    r = rows("quota")
    assert r[("Queue team-ops", "spec")] == {
        "priority": 200,
        "resources": {"gpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1}},
    }
    assert r[("Queue team-research", "spec")]["parentQueue"] == "ai-factory"
    later = rows("fairshare")[("Queue team-light", "spec, set by a later step")]
    assert later["resources"]["gpu"]["overQuotaWeight"] == 3


def test_the_topology_and_the_constraints_on_the_jobs_are_shown():
    r = rows("topology")
    assert r[("Topology lab-topology", "spec")] == {
        "levels": [
            {"nodeLabel": "topology.kailab.io/zone", "alias": "zone"},
            {"nodeLabel": "topology.kailab.io/rack", "alias": "rack"},
        ]
    }
    assert r[("Job same-rack", "metadata")]["annotations"] == {
        "kai.scheduler/batch-min-member": "3",
        "kai.scheduler/topology": "lab-topology",
        "kai.scheduler/topology-required-placement": "rack",
    }
    assert r[("Job near", "metadata")]["annotations"]["kai.scheduler/topology-preferred-placement"] == "rack"


def test_fractions_and_many_jobs_name_their_copies():
    r = rows("fractions")
    assert r[("Pod halves-0 (×2)", "metadata")]["annotations"] == {"gpu-fraction": "0.5"}
    assert "containers" not in r[("Pod halves-0 (×2)", "spec")]  # a fraction asks for no whole GPU
    assert ("Job small-0 (×12)", "metadata") in rows("consolidation")


def test_every_lesson_shows_every_workload_and_nothing_kai_does_not_read():
    for path in sorted(EXERCISES.glob("*.yaml")):
        name, s = path.stem, load_scenario(path)
        lines = kai_lines(s)
        shown = " ".join(f"{line.obj} {line.what}" for line in lines)
        for w in s.workloads:
            assert f" {w.name}" in shown, (name, w.name)
            if w.queue:
                assert f"kai.scheduler/queue: {w.queue}" in shown, (name, w.name)
        own = re.search(r"(?<![\w.-])kailab\.io/", shown)  # kailab's labels; topology.kailab.io/rack is a rack's
        assert not own and "kwok" not in shown.replace("kwok-", ""), name
        for line in lines:
            assert isinstance(yaml.safe_load(line.what), dict), (name, line)


def test_the_lab_prefix_shows_as_applied():
    s = prefixed(load_scenario(EXERCISES / "reclaim.yaml"), "alice")
    shown = " ".join(f"{line.obj} {line.what}" for line in kai_lines(s))
    assert "Queue alice-team-research" in shown and "kai.scheduler/queue: alice-team-prod" in shown


def test_the_table_prints_brackets_as_text_not_markup():
    out = io.StringIO()
    Console(file=out, width=300).print(applied_table(kai_lines(load_scenario(EXERCISES / "gang.yaml"))))
    assert 'containers: [{resources: {limits: {nvidia.com/gpu: "1"}}}]' in out.getvalue()
