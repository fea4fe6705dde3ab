"""A class's roster and partition plan: bad input refused with one clear message, a learner's slice labelled."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from kailab import parallel, partitions, shards
from kailab.classroom import access, roster
from kailab.cli import app
from kailab.commands.klass import roster_of
from kailab.errors import RosterError
from kailab.fleet import load_fleet
from kailab.labels import KAI_NAMESPACE, NODEPOOL_LABEL
from kailab.lesson import EXERCISE_NAMES
from kailab.ownership import Owner, stamped
from kailab.paths import EXERCISES
from kailab.runtimes import local_partitions
from kailab.runtimes.local_kai import scheduler_spec
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.manifests import workload_objects
from kailab.scenarios.model import NodeStep


def test_a_count_names_its_learners():
    assert roster.from_count(3).names == ("learner-1", "learner-2", "learner-3")


@pytest.mark.parametrize("count", [0, -1, roster.MAX_LEARNERS + 1, 10_000])
def test_a_class_of_none_or_too_many_is_refused(count):
    with pytest.raises(RosterError, match=r"at least one learner|more than one lab holds"):
        roster.from_count(count)


def test_a_roster_file_skips_comments_and_blank_lines(tmp_path):
    f = tmp_path / "class.txt"
    f.write_text("# period 2\nann\n\nbob  # back row\n")
    assert roster.from_file(f).names == ("ann", "bob")
    f.write_text("\ufeffann\r\nbob\r\n")  # as Notepad saves it: a byte-order mark, CRLF
    assert roster.from_file(f).names == ("ann", "bob")


@pytest.mark.parametrize(
    "text, words",
    [
        ("ann\nbob\nann\n", ["class.txt:3", "'ann' is named twice", "class.txt:1"]),
        ("ann\nBob_2\n", ["class.txt:2", "'Bob_2' cannot be a learner's name"]),
        ("ann\n" + "x" * 21 + "\n", ["class.txt:2", "1 to 20"]),  # would overflow a lesson's 63-character names
        ("ann\nann-b\n", ["class.txt:2", "'ann-b' starts with 'ann'", "overlap"]),
        ("# nobody\n\n", ["names no learner"]),
        ("".join(f"l{i}\n" for i in range(10_000)), ["10000 learners"]),
    ],
)
def test_a_bad_roster_names_the_line_and_the_problem(tmp_path, text, words):
    f = tmp_path / "class.txt"
    f.write_text(text)
    with pytest.raises(RosterError) as e:
        roster.from_file(f)
    for w in words:
        assert w in e.value.message


def test_a_roster_that_is_not_text_or_not_there(tmp_path):
    with pytest.raises(RosterError, match="No roster file"):
        roster.from_file(tmp_path / "missing.txt")
    binary = tmp_path / "class.bin"
    binary.write_bytes(b"\xff\xfe\x00ann")
    with pytest.raises(RosterError, match="class.bin is not a text file"):
        roster.from_file(binary)


def test_learners_come_from_exactly_one_source(tmp_path):
    with pytest.raises(RosterError, match="one of --learners N"):
        roster_of(None, [], None)
    with pytest.raises(RosterError, match="not --learners and --learner"):
        roster_of(2, ["ann"], None)
    with pytest.raises(RosterError, match="--learner ann: 'ann' is named twice"):
        roster_of(None, ["ann", "ann"], None)


def test_the_command_line_refuses_bad_learners_before_looking_for_a_lab(tmp_path, monkeypatch):
    monkeypatch.setenv("KAILAB_HOME", str(tmp_path / "no-lab"))
    result = CliRunner().invoke(app, ["class", "up", "--learners", "0"])
    assert result.exit_code == 1
    assert "at least one learner" in str(result.exception.message if result.exception else result.output)


def test_a_learners_nodes_are_the_lesson_fleet_named_and_labelled_for_them():
    nodes = partitions.nodes(load_fleet(), "ann")
    assert [n["metadata"]["name"] for n in nodes] == [
        "ann-kwok-a100-0",
        "ann-kwok-a100-1",
        "ann-kwok-h100-0",
        "ann-kwok-l40s-0",
        "ann-kwok-l40s-1",
    ]
    assert {n["metadata"]["labels"][NODEPOOL_LABEL] for n in nodes} == {"ann"}
    assert all(partitions.taint("ann") in n["spec"]["taints"] for n in nodes)  # no one else's pod lands there
    assert sum(int(n["status"]["allocatable"]["nvidia.com/gpu"]) for n in nodes) == 32
    assert all(n["metadata"]["labels"]["kubernetes.io/hostname"] == n["metadata"]["name"] for n in nodes)


def test_everything_a_learners_lesson_applies_is_in_their_partition():
    scenario = partitions.for_partition(load_scenario(EXERCISES / "gang.yaml"), "ann")
    owner = partitions.owner("ann")
    for w in scenario.workloads:
        for obj in workload_objects(w, scenario):
            obj = stamped(obj, owner)
            assert obj["metadata"]["labels"][NODEPOOL_LABEL] == "ann"
            template = (obj.get("spec") or {}).get("template")
            if template:  # the pod-grouper copies the label from the top owner or the pod onto the PodGroup
                assert template["metadata"]["labels"][NODEPOOL_LABEL] == "ann"
    assert scenario.namespace.startswith("ann-")
    assert all(q.name.startswith("ann-") for q in scenario.queues)


def test_a_learners_owner_is_not_the_labs_nor_another_learners():
    ann, bob = partitions.owner("ann"), partitions.owner("bob")
    assert ann.owns(ann.labels) and not bob.owns(ann.labels) and not Owner().owns(ann.labels)
    assert "kailab.io/lab-id=class-ann" in ann.selector()


def test_nodes_a_lesson_names_become_the_learners():
    scenario = partitions.for_partition(load_scenario(EXERCISES / "fractions.yaml"), "ann")
    pinned = {w.node for w in scenario.workloads if w.node}
    assert pinned == {"ann-kwok-a100-0"}
    for step in scenario.steps:
        if isinstance(step, NodeStep):
            assert step.node.startswith("ann-kwok-")


def test_a_partition_scheduler_has_its_own_label_value_name_and_folder(tmp_path):
    spec = scheduler_spec(
        {"kai-scheduler": Path("/bin/kai-scheduler")},
        tmp_path / "kubeconfig",
        tmp_path / "ann",
        partition="ann",
        name=shards.scheduler_name("ann"),
    )
    assert spec.name == "kai-scheduler-ann-shard"  # what KAI's operator names the Deployment of shard ann-shard
    assert "--partition-label-value=ann" in spec.argv
    assert f"--nodepool-label-key={NODEPOOL_LABEL}" in spec.argv
    assert (tmp_path / "ann" / "scheduler-config.yaml").is_file()
    lab_own = scheduler_spec({"kai-scheduler": Path("/bin/kai-scheduler")}, tmp_path / "kubeconfig", tmp_path / "lab")
    assert "--partition-label-value=" in lab_own.argv and lab_own.name == "kai-scheduler"


# -- credentials (pure builders; the fleet test tries them against the API server) --------------------------------

from kailab.classroom import credentials  # noqa: E402


def _rules(objs):
    return [r for o in objs if o["kind"] in ("Role", "ClusterRole") for r in o["rules"]]


def test_a_learners_roles_are_bound_in_their_namespaces_only():
    namespaces = access.lesson_namespaces("ann")
    assert len(namespaces) == len(EXERCISE_NAMES) + 1 and all(n.startswith("ann-") for n in namespaces)  # + challenges
    objs = credentials.learner_objects("ann", namespaces, Owner())
    placed = {o["metadata"].get("namespace") for o in objs} - {None}
    assert placed == {credentials.CLASS_NAMESPACE, KAI_NAMESPACE, *namespaces}
    (in_kai,) = [o for o in objs if o["kind"] == "Role" and o["metadata"]["namespace"] == KAI_NAMESPACE]
    assert in_kai["rules"] == [  # KAI's namespace: whether their scheduler's Deployment rolled out, its metrics
        {
            "apiGroups": ["apps"],
            "resources": ["deployments"],
            "resourceNames": ["kai-scheduler-ann-shard"],
            "verbs": ["get"],
        },
        {
            "apiGroups": [""],
            "resources": ["services/proxy"],
            "resourceNames": ["kai-scheduler-ann-shard", "kai-scheduler-ann-shard:http-metrics"],
            "verbs": ["get"],
        },
    ]
    own = next(o for o in objs if o["kind"] == "ClusterRole")
    assert own["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["namespaces"],
            "resourceNames": namespaces,
            "verbs": ["get", "patch", "update"],
        },
        {  # their scheduler's settings: their own SchedulingShard, by name
            "apiGroups": ["kai.scheduler"],
            "resources": ["schedulingshards"],
            "resourceNames": ["ann-shard"],
            "verbs": ["get", "patch"],
        },
    ]
    for obj in objs:
        if obj["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            assert obj["subjects"] == [
                {"kind": "ServiceAccount", "name": "learner-ann", "namespace": credentials.CLASS_NAMESPACE}
            ]


def test_no_learner_rule_is_a_wildcard_or_writes_nodes_secrets_or_anothers_scheduler_settings():
    objs = credentials.learner_objects("ann", access.lesson_namespaces("ann"), Owner()) + credentials.class_objects()
    for rule in _rules(objs):
        assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], rule
        assert "secrets" not in rule["resources"]
        if "kai.scheduler" in rule["apiGroups"] and rule["resources"] != ["topologies"]:  # Topologies: the lesson's
            # KAI's Config never; of the SchedulingShards, ann's own only
            assert rule == {
                "apiGroups": ["kai.scheduler"],
                "resources": ["schedulingshards"],
                "resourceNames": [shards.shard_name("ann")],
                "verbs": ["get", "patch"],
            }
        if "nodes" in rule["resources"]:
            assert set(rule["verbs"]) <= {"get", "list", "watch"}


def test_the_admission_policy_reads_the_learner_from_the_service_account_name():
    policy, binding = credentials.admission_policy({})
    spec = policy["spec"]
    prefix = spec["matchConditions"][0]["expression"].split("'")[1]
    assert credentials.username("ann").startswith(prefix)
    offset = int(spec["variables"][0]["expression"].split("substring(")[1].rstrip(")"))
    assert credentials.username("ann")[offset:] == "ann"
    kinds = {r["resources"][0] for r in spec["matchConstraints"]["resourceRules"]}
    assert kinds == {
        *("queues", "priorityclasses", "topologies", "namespaces", "schedulingshards"),
        *("pods", "jobs", "deployments", "replicasets", "statefulsets", "podgroups"),
    }
    role = next(
        o
        for o in credentials.learner_objects("ann", ["ann-x"], Owner())
        if o["kind"] == "Role" and o["metadata"]["namespace"] == "ann-x"
    )
    may_make = {res for rule in role["rules"] if "create" in rule["verbs"] for res in rule["resources"]}
    pod_makers = {"pods", "jobs", "cronjobs", "deployments", "replicasets", "statefulsets", "daemonsets"}
    assert may_make & pod_makers == {k for _, k in credentials.WORKLOADS}  # each kind that makes pods: under the rule
    assert "podgroups" in may_make and credentials.PODGROUPS[1] == "podgroups"  # a gang by hand: under its rule
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    assert spec["failurePolicy"] == "Fail"


def test_a_learners_kubeconfig_loads_and_holds_their_token_only():
    import base64

    from kubernetes import client, config

    conf = credentials.kubeconfig(
        "ann", "https://127.0.0.1:6443", base64.b64encode(b"CA").decode(), "tok", "kailab-class@127.0.0.1:6443"
    )
    cfg = client.Configuration()
    config.kube_config.KubeConfigLoader(conf).load_and_set(cfg)
    assert cfg.host == "https://127.0.0.1:6443"
    assert cfg.api_key == {"BearerToken": "Bearer tok"}
    assert conf["current-context"] == "kailab-class-ann"
    with pytest.raises(ValueError):
        credentials.kubeconfig("ann", "https://x", "not base64!", "tok", "c")


def test_a_revoked_credential_gets_one_clear_message(monkeypatch, capsys):
    from kubernetes.client.exceptions import ApiException

    import kailab.cli as cli

    def revoked():
        raise ApiException(status=401, reason="Unauthorized")

    monkeypatch.setattr(cli, "app", revoked)
    with pytest.raises(SystemExit) as e:
        cli.main()
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert "your class has ended or your credential was revoked" in err
    assert "Traceback" not in err and "Unexpected" not in err


def test_a_lesson_record_lives_in_the_learners_namespace_labelled_as_theirs():
    from kailab.checks import Verdict
    from kailab.classroom import records
    from kailab.labels import LEARNER_LABEL, RECORD_LABEL

    verdict = Verdict(
        scenario="quota", title="Quota", namespace="ann-kailab-quota", seconds=3.04, error="the API server said no"
    )
    obj = records.record_object("ann", verdict, prediction="team-a gets 8")
    assert obj["metadata"]["namespace"] == "ann-kailab-quota"
    labels = obj["metadata"]["labels"]
    assert labels[LEARNER_LABEL] == "ann" and labels[RECORD_LABEL] == "quota" and labels[NODEPOOL_LABEL] == "ann"
    assert partitions.owner("ann").owns(labels)
    assert obj["data"]["outcome"] == "FAIL" and obj["data"]["seconds"] == "3.0"
    assert obj["data"]["prediction"] == "team-a gets 8"
    assert json.loads(obj["data"]["verdict"])["error"] == "the API server said no"


def test_a_lesson_is_recorded_when_it_starts_and_its_verdict_replaces_it_with_the_timeline():
    from kailab.checks import Verdict
    from kailab.classroom import records

    started = records.started_object("ann", "quota", "Quota", "ann-kailab-quota")
    assert started["data"]["outcome"] == records.RUNNING and started["data"]["started"]
    verdict = Verdict(scenario="quota", title="Quota", namespace="ann-kailab-quota", timeline=[[0.0, {"a": 2}]])
    done = records.record_object("ann", verdict)
    assert (done["metadata"]["name"], done["metadata"]["namespace"]) == (
        started["metadata"]["name"],
        started["metadata"]["namespace"],
    )  # one object: the verdict replaces the started record
    assert json.loads(done["data"]["timeline"]) == [[0.0, {"a": 2}]]


# -- joining a class (the learner's side) --------------------------------------------------------------------------

from kailab.classroom import joined  # noqa: E402
from kailab.errors import KailabError  # noqa: E402


def _credential(tmp_path, learner="ann", server="https://127.0.0.1:1", ca: bytes = b"CA"):
    import base64

    import yaml

    cluster = "kailab-class@" + server.split("://", 1)[-1]
    conf = credentials.kubeconfig(learner, server, base64.b64encode(ca).decode(), "tok", cluster)
    path = tmp_path / f"{learner}.kubeconfig"
    path.write_text(yaml.safe_dump(conf))
    return path


def test_join_refuses_a_file_that_is_not_a_class_credential(tmp_path):
    with pytest.raises(KailabError, match="No file"):
        joined.learner_of(tmp_path / "missing.kubeconfig")
    other = tmp_path / "mine.kubeconfig"
    other.write_text("apiVersion: v1\nkind: Config\ncurrent-context: kind-kind\n")
    with pytest.raises(KailabError, match="is not a class credential: its context is kind-kind"):
        joined.learner_of(other)
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("current-context: [unclosed\n")
    with pytest.raises(KailabError, match="broken.kubeconfig:1: not valid YAML"):
        joined.learner_of(broken)
    assert joined.learner_of(_credential(tmp_path)) == "ann"


def test_join_refuses_a_credential_for_a_cluster_that_does_not_answer_and_remembers_nothing(tmp_path):
    home = tmp_path / "home"
    with pytest.raises(KailabError, match="refuses connections .is the cluster running..: is the class up"):
        joined.join(_credential(tmp_path, server="https://127.0.0.1:1"), home)
    assert joined.current(home) is None


def test_a_class_address_that_never_answers_is_said_within_ten_seconds_naming_it(tmp_path):
    """A learner's machine that reaches the address but nothing answers there (a firewall that drops, a server
    that hangs): one message naming the address, in seconds, not the client's retries of a minute."""
    import socket
    import time

    import certifi

    with socket.socket() as silent:  # accepts connections (the kernel does) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        server = f"https://127.0.0.1:{silent.getsockname()[1]}"
        start = time.monotonic()
        with pytest.raises(KailabError) as said:
            real_ca = Path(certifi.where()).read_bytes()  # a CA the TLS library loads: the wait is for the server
            joined.join(_credential(tmp_path, server=server, ca=real_ca), tmp_path / "home")
        took = time.monotonic() - start
    assert server in said.value.message and "does not answer" in said.value.message, said.value.message
    assert took < 10, took


def test_the_class_page_is_a_table_of_learners_and_lessons_with_user_text_kept_as_data():
    from kailab.classroom.report import markdown, sections

    report = {
        "bob": {
            "lessons": {"gang": {"outcome": "RUNNING", "started": "2026-11-24T09:01:00+00:00"}},
            "stuck": [
                {"kind": "pod", "pod": "bob-kailab-gang/w-0", "pending_seconds": 300, "reason": "0/5 nodes | no GPUs"},
                {"kind": "lesson", "lesson": "gang", "namespace": "bob-kailab-gang", "reason": "started 300 s ago"},
            ],
        },
        "ann": {
            "lessons": {
                "quota": {
                    "outcome": "PASS",
                    "finished": "2026-11-24T09:00:00+00:00",
                    "seconds": "3.0",
                    "prediction": "team-a *wins* | [x](y)\nsecond line",
                }
            },
            "stuck": [],
        },
    }
    lines = markdown(sections(report, ["gang", "quota"])).splitlines()
    assert lines[:3] == ["# Class report", "", "## 2 learners, 2 lessons"]
    assert lines[4] == "| learner | passed | failed | running | not yet | attempts | lessons |"
    assert lines[6] == "| ann | 1 | 0 | 0 | 1 | 1 | quota PASS |"
    assert lines[7] == "| bob | 0 | 0 | 1 | 1 | 1 | gang RUNNING |"
    assert "| ann | quota | team-a \\*wins\\* \\| \\[x\\]\\(y\\) second line | PASS |" in lines
    assert "- bob: bob-kailab-gang/w-0 Pending 300 s — the scheduler says: 0/5 nodes \\| no GPUs" in lines
    assert "- bob: lesson gang \\(bob-kailab-gang\\) started 300 s ago" in lines
    nobody = markdown(sections({"ann": {"lessons": {}, "stuck": []}}, ["quota"]))
    assert nobody.endswith("## Stuck\n\nNobody.\n")


HOSTILE = [
    "<script>alert(1)</script>",
    "a | b",
    "[link](http://x)",
    "{{x}}",
    "[bold]red[/bold]",
    "**strong**",
    "&amp; &lt;i&gt;",
]


def _hostile_report() -> dict:
    """A class whose every user text (learner name, prediction, pod name, KAI's words) is one of HOSTILE."""
    report = {}
    for i, text in enumerate(HOSTILE):
        report[text] = {
            "lessons": {
                "quota": {
                    "outcome": "PASS",
                    "finished": "t",
                    "prediction": text,
                    "title": text,
                    "timeline": [[0, {text: 1}], [1, {text: 2}]],
                }
            },
            "stuck": [{"kind": "pod", "pod": f"ns-{i}/{text}", "pending_seconds": 1, "reason": text}],
        }
    return report


class _Page(__import__("html.parser").parser.HTMLParser):
    """The elements and the text a browser would show."""

    def __init__(self):
        super().__init__()
        self.tags, self.text, self.alts = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.alts += [v for k, v in attrs if k == "alt"]

    def handle_data(self, data):
        self.text.append(data)


def _shown(page: str) -> _Page:
    parsed = _Page()
    parsed.feed(page)
    return parsed


def test_hostile_names_and_notes_stay_literal_on_the_html_page():
    from kailab.classroom.report import html_page, sections, timelines

    report = _hostile_report()
    pictures = timelines(report)  # kailab evidence's renderer draws each learner's timeline, titles as text
    assert set(pictures) == set(HOSTILE) and all(p.startswith(b"\x89PNG") for p in pictures.values())
    page = _shown(html_page(sections(report, ["quota"], pictures)))
    allowed = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "table", "tr", "th", "td", "ul", "li"}
    assert set(page.tags) <= allowed | {"img", "p"}, set(page.tags) - allowed  # no script, no link
    shown = "\n".join(page.text)
    for text in HOSTILE:
        assert text in shown, text  # a cell, a stuck line, a heading: as typed
        assert f"GPU timelines of {text}" in page.alts


def test_hostile_names_and_notes_stay_literal_on_the_markdown_page(tmp_path):
    from markdown_it import MarkdownIt

    from kailab.classroom import report as page

    out = tmp_path / "class.md"
    written = page.write(_hostile_report(), ["quota"], out)
    assert len(written) == 1 + len(HOSTILE) and all(p.exists() for p in written)  # the page, a picture each
    rendered = _shown(MarkdownIt("commonmark").enable("table").render(out.read_text()))
    assert not {"script", "a", "strong", "em"} & set(rendered.tags), rendered.tags
    shown = "".join(rendered.text)
    for text in HOSTILE:
        assert text in shown, text
    for name in HOSTILE:  # each picture is named in the page by the file written beside it
        assert f"class-timelines/{page.picture_file(name)}" in out.read_text()


def test_hostile_text_in_class_status_is_printed_as_typed():
    from io import StringIO

    from rich.console import Console

    from kailab.classroom.records import stuck_line

    console = Console(file=StringIO(), width=300)
    for text in HOSTILE:
        console.print(
            stuck_line(text, {"kind": "pod", "pod": text, "pending_seconds": 1, "reason": text}), markup=False
        )
    printed = console.file.getvalue()
    for text in HOSTILE:
        assert f"{text}: {text} Pending 1 s — the scheduler says: {text}" in printed


# --- memory: said before anything is built ------------------------------------------------------------------------

GIB = 2**30


def test_the_memory_a_class_needs_is_compared_with_what_is_available():
    assert local_partitions.memory_shortfall(8, 24 * GIB) == ""
    short = local_partitions.memory_shortfall(8, 1 * GIB)
    assert "8 learners need about 2.1 GiB" in short and "1.0 GiB available" in short and "enough for 2" in short
    assert local_partitions.partitions_that_fit(local_partitions.MEMORY_RESERVE - 1) == 0
    assert (
        local_partitions.partitions_that_fit(
            local_partitions.MEMORY_RESERVE + 2 * local_partitions.MEMORY_PER_PARTITION
        )
        == 2
    )


class _NoCluster:
    """A client that fails the test if anything is read or applied."""

    def __getattr__(self, name):
        raise AssertionError(f"the cluster was used ({name}) before the memory was checked")


class _Runtime:
    def __init__(self, home: Path):
        self.home = home


def test_class_up_refuses_a_class_the_machine_cannot_hold_with_nothing_applied(tmp_path):
    from kailab.classroom.klass import Class

    klass = Class(local_partitions.LocalPartitions(_Runtime(tmp_path)))
    with pytest.raises(RosterError) as e:
        klass.up(_NoCluster(), roster.from_count(8), load_fleet(), None, available=GIB)
    assert "cannot hold the class: 8 learners need about 2.1 GiB" in e.value.message
    assert "Nothing was applied" in e.value.message and "at most 2 learners" in e.value.hint
    assert not (tmp_path / "kai").exists()  # not even the class's state file
    with pytest.raises(RosterError) as e:
        klass.up(_NoCluster(), roster.from_count(1), load_fleet(), None, available=local_partitions.MEMORY_RESERVE)
    assert "Free memory first" in e.value.hint


# --- demo all side by side: when, and in which partitions ----------------------------------------------------------


def test_every_lesson_has_a_partition_name_a_roster_accepts():
    from kailab.lesson import lesson_names

    names = [parallel.partition(n) for n in lesson_names()]
    assert roster.Roster(tuple(names)).names == tuple(names) and len(set(names)) == len(lesson_names())


def _choice(
    monkeypatch, capsys, names, parallel=None, sequential_only=False, runtime=None, joined=None, available=24 * GIB
):
    import psutil

    from kailab.commands.lessons import side_by_side
    from kailab.lab import LearnerSlice, OwnLab

    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("M", (), {"available": available})())
    if joined is not None:
        lab = LearnerSlice(Path("/nonexistent"), joined)
    else:
        lab = OwnLab(Path("/nonexistent"))
        lab.__dict__.update(state=None, runtime=runtime)  # lab.json read: this runtime's (None: no lab)
    at_once = side_by_side(lab, names, parallel, sequential_only, quiet=False)
    return at_once, capsys.readouterr().err


def test_demo_all_runs_side_by_side_only_where_kailab_starts_partition_schedulers(monkeypatch, capsys, tmp_path):
    from kailab.classroom.joined import Joined
    from kailab.runtimes.kind import KindRuntime

    lessons = ["quota", "gang", "borrow"]
    assert _choice(monkeypatch, capsys, ["quota"]) == (1, "")  # one lesson: as ever, in the lab's own partition
    assert _choice(monkeypatch, capsys, lessons, parallel=1) == (1, "")  # asked for one after another
    at_once, said = _choice(monkeypatch, capsys, lessons, runtime=KindRuntime(home=tmp_path))
    assert at_once == 1 and "one after another: on the kind runtime kailab starts no partition schedulers" in said
    at_once, said = _choice(monkeypatch, capsys, lessons, sequential_only=True)
    assert at_once == 1 and "--evidence" in said
    at_once, said = _choice(monkeypatch, capsys, lessons, joined=Joined("ann", tmp_path / "ann.kubeconfig"))
    assert at_once == 1 and "learner's slice" in said
    at_once, said = _choice(monkeypatch, capsys, lessons)
    assert at_once == 1 and "one after another: no lab is running" in said


def test_demo_side_by_side_runs_no_more_at_once_than_memory_holds(monkeypatch, capsys, tmp_path):
    from kailab.runtimes.local import LocalRuntime

    class _Local(LocalRuntime):
        def _state(self):
            return type("S", (), {"kai_components": ["kai-scheduler"], "prefix": ""})()

    local = _Local(home=tmp_path)
    lessons = ["quota", "gang", "borrow", "reclaim"]
    assert _choice(monkeypatch, capsys, lessons, runtime=local) == (4, "")
    assert _choice(monkeypatch, capsys, lessons, parallel=3, runtime=local) == (3, "")
    two = local_partitions.MEMORY_RESERVE + 2 * local_partitions.MEMORY_PER_PARTITION
    assert _choice(monkeypatch, capsys, lessons, runtime=local, available=two) == (2, "")
    at_once, said = _choice(monkeypatch, capsys, lessons, runtime=local, available=local_partitions.MEMORY_RESERVE)
    assert at_once == 1 and "memory for 0 lesson partitions" in said


def test_a_partitions_pods_for_other_schedulers_stay_on_its_nodes_and_kai_pods_are_left_as_they_are():
    from kailab.ownership import Owner

    scenario = partitions.for_partition(load_scenario(EXERCISES / "baseline.yaml"), "ann")
    job = stamped(workload_objects(scenario.workloads[0], scenario)[0], partitions.owner("ann"))
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {NODEPOOL_LABEL: "ann"}
    pod = stamped({"kind": "Pod", "metadata": {}, "spec": {"containers": []}}, partitions.owner("ann"))
    assert pod["spec"]["nodeSelector"] == {NODEPOOL_LABEL: "ann"}
    typo = stamped({"kind": "Pod", "metadata": {}, "spec": {"schedulerName": "kai-schedular"}}, partitions.owner("ann"))
    assert typo["spec"]["nodeSelector"] == {NODEPOOL_LABEL: "ann"}  # no scheduler's: still only ever on her nodes
    kai = partitions.for_partition(load_scenario(EXERCISES / "quota.yaml"), "ann")
    kai_job = stamped(workload_objects(kai.workloads[0], kai)[0], partitions.owner("ann"))
    assert "nodeSelector" not in kai_job["spec"]["template"]["spec"]
    own = stamped(workload_objects(scenario.workloads[0], scenario)[0], Owner())  # a lab of one's own: every node
    assert "nodeSelector" not in own["spec"]["template"]["spec"]


def test_a_partitions_pods_tolerate_its_taint_and_no_other_partitions():
    from kailab.ownership import Owner

    for name in ("baseline", "quota"):  # the default scheduler's and KAI's
        scenario = partitions.for_partition(load_scenario(EXERCISES / f"{name}.yaml"), "ann")
        spec = stamped(workload_objects(scenario.workloads[0], scenario)[0], partitions.owner("ann"))["spec"][
            "template"
        ]
        tolerations = spec["spec"]["tolerations"]
        assert partitions.toleration("ann") in tolerations and partitions.toleration("bob") not in tolerations
        assert tolerations.count(partitions.toleration("ann")) == 1
    pod = stamped({"kind": "Pod", "metadata": {}, "spec": {"schedulerName": "kai-scheduler"}}, partitions.owner("ann"))
    assert pod["spec"]["tolerations"] == [partitions.toleration("ann")]
    twice = stamped(pod, partitions.owner("ann"))  # stamped again (an object re-applied): one toleration still
    assert twice["spec"]["tolerations"] == [partitions.toleration("ann")]
    own = stamped(workload_objects(scenario.workloads[0], scenario)[0], Owner())  # the lab's own: no learner's
    keys = {t["key"] for t in own["spec"]["template"]["spec"]["tolerations"]}
    assert partitions.taint("ann")["key"] not in keys
    # a toleration matches a taint of the same key, value and effect (Kubernetes' rule for operator Equal)
    t, tol = partitions.taint("ann"), partitions.toleration("ann")
    assert (t["key"], t["value"], t["effect"]) == (tol["key"], tol["value"], tol["effect"]) and tol[
        "operator"
    ] == "Equal"


def test_a_learner_reads_their_fair_shares_through_the_api_server_from_their_shard():
    """On the local runtime the supervisor publishes the scheduler's fair-share samples on the shard (its metrics
    port stays on the instructor's loopback): a learner reads them there, from any machine, with their own
    credential; before the first publication there are none. On kind and existing clusters: the API server's proxy
    to the operator's Service."""
    from kailab import fairshare, lab
    from kailab.labels import SHARD_FAIR_SHARES_ANNOTATION, SHARD_METRICS_ANNOTATION

    published = 'kai_queue_fair_share_gpu{queue_name="ann-a"} 4\n'

    class OneShard:
        def __init__(self, annotations):
            self.annotations = annotations
            self.core = SimpleNamespace(
                connect_get_namespaced_service_proxy_with_path=lambda *a, **k: "proxied " + a[0]
            )

        def get(self, api, kind, name, namespace=None):
            return {"metadata": {"name": name, "annotations": self.annotations}, "spec": {}}

    local = shards.ShardSchedulerControl(
        OneShard({SHARD_METRICS_ANNOTATION: "http://127.0.0.1:1/metrics", SHARD_FAIR_SHARES_ANNOTATION: published}),
        "ann",
    )
    assert local.metrics() == published
    assert {q: s.gpu for q, s in fairshare.parse(local.metrics()).items()} == {"ann-a": 4.0}
    not_yet = shards.ShardSchedulerControl(OneShard({SHARD_METRICS_ANNOTATION: "http://127.0.0.1:1/metrics"}), "ann")
    assert not_yet.metrics() is None  # never the loopback port itself, which on a learner's machine is someone else's
    operator = shards.ShardSchedulerControl(OneShard({}), "ann")
    assert operator.metrics() == "proxied kai-scheduler-ann-shard:http-metrics"
    assert not hasattr(lab, "learner_metrics")


def test_only_the_fair_share_samples_are_published():
    from kailab import fairshare

    text = (
        "# HELP kai_queue_fair_share_gpu x\n# TYPE kai_queue_fair_share_gpu gauge\n"
        'kai_queue_fair_share_gpu{queue_name="b"} 2\n'
        'kai_queue_fair_share_gpu{queue_name="a"} 22\n'
        'kai_queue_fair_share_cpu_cores{queue_name="a"} 1.5\n'
        'kai_action_scheduling_latency_milliseconds{action="allocate"} 3\n'
        "go_goroutines 120\n"
    )
    kept = fairshare.samples(text)
    assert kept.splitlines() == [
        'kai_queue_fair_share_cpu_cores{queue_name="a"} 1.5',
        'kai_queue_fair_share_gpu{queue_name="a"} 22',
        'kai_queue_fair_share_gpu{queue_name="b"} 2',
    ]
    assert fairshare.parse(kept) == fairshare.parse(text)
    assert fairshare.samples("") == "" and fairshare.samples("go_goroutines 1\n") == ""


def test_a_class_on_kind_or_an_existing_cluster_is_refused_when_the_nodes_lack_room_for_its_schedulers(monkeypatch):
    """KAI's operator asks each shard's scheduler for the same requests (the Config's): ``class up`` counts the room
    kube-scheduler would (allocatable less the requests there, on nodes whose taints the pod tolerates) first."""
    from types import SimpleNamespace as NS

    from kailab.runtimes import operator_partitions as partitions
    from kailab.runtimes.base import Traits

    def container(cpu: str, memory: str):
        return NS(resources=NS(requests={"cpu": cpu, "memory": memory}))

    def node(name: str, cpu: str, memory: str, taints=()):
        return NS(
            metadata=NS(name=name),
            spec=NS(unschedulable=None, taints=[NS(key=k, value=v, effect=e) for k, v, e in taints]),
            status=NS(allocatable={"cpu": cpu, "memory": memory}),
        )

    scheduler = NS(
        metadata=NS(name="kai-scheduler-default"),
        spec=NS(template=NS(spec=NS(containers=[container("250m", "512Mi")], tolerations=[]))),
    )
    busy = {"kind": [NS(status=NS(phase="Running"), spec=NS(containers=[container("1300m", "1Gi")]))]}
    kube = NS(
        apps=NS(list_namespaced_deployment=lambda ns: NS(items=[scheduler])),
        core=NS(
            list_node=lambda: NS(
                items=[
                    node("kind", "2", "8Gi"),  # 0.7 CPU free: two more schedulers
                    node("kwok-a100-0", "64", "512Gi", [("kwok.x-k8s.io/node", "fake", "NoSchedule")]),
                ]
            ),
            list_pod_for_all_namespaces=lambda field_selector: NS(items=busy.get(field_selector.split("=")[1], [])),
        ),
    )
    assert partitions.schedulers_that_fit(kube) == (2, "0.25 CPU and 0.5 GiB")
    monkeypatch.setattr(partitions, "operator_missing", lambda kube: "")
    klass = partitions.OperatorPartitions(NS(traits=Traits("kind"), home=Path("/nonexistent")))
    klass.check(kube, 2, None)
    with pytest.raises(RosterError, match="room for 2 more schedulers") as e:
        klass.check(kube, 3, None)
    assert "Nothing was applied" in e.value.message and "at most 2" in e.value.hint


def test_side_by_side_counts_a_scenarios_sleep_steps_so_the_longest_sleeper_starts_first(tmp_path):
    from kailab.parallel import asleep
    from kailab.scenarios.loader import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nworkloads:\n  - {name: j, gpus: 1}\n"
        "steps:\n  - apply: j\n  - sleep: 5s\n  - wait: {workload: j, running: 1}\n  - sleep: 2m\n"
    )
    assert asleep(load_scenario(path)) == 125
    path.write_text("name: s\nworkloads:\n  - {name: j, gpus: 1}\nsteps:\n  - apply: j\n")
    assert asleep(load_scenario(path)) == 0


def test_class_up_warns_with_the_benchs_figures_when_the_cores_cannot_hold_the_class_at_twice_one_learners_time():
    """The cores a class needs grow faster than the class (each learner's scheduler watches every learner's pods):
    bench/class.py's figures, kept in kailab/runtimes/local_partitions.py; a machine short of them is warned, never
    refused (every verdict still comes, later)."""
    need = [local_partitions.cores_needed(n) for n in (1, 4, 8, 16, 30)]
    assert need == sorted(need) and need[-1] / 30 > need[0]  # more per learner as the class grows
    enough = math.ceil(local_partitions.cores_needed(16))
    assert local_partitions.cores_shortfall(16, enough) == ""
    said = local_partitions.cores_shortfall(16, 2)
    assert f"16 learners need about {enough} cores" in said and "this machine has 2" in said
    assert f"{local_partitions.LESSON_CPU_SECONDS:.1f} CPU s in {local_partitions.LESSON_SECONDS:.1f} s" in said
