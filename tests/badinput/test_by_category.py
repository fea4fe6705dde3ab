"""Bad input by category, not by example (issue 38).

Every command that reads a file meets each kind of file that is not what it wants (a FIFO, a device, a symbolic link
out of its folder, a huge file, an empty one, a binary one, a folder, valid YAML or JSON of the wrong shape, wrong
types in each field); every command that writes meets a file in its way, a symbolic link and a read-only folder;
every printed text field meets terminal escape sequences. Each runs in this process (``kailab.cli.main`` with
``sys.argv``, or the function the command calls) under a hang guard. The target: no traceback, no hang, no file of
the user's changed, and nothing a learner wrote reaching the instructor's terminal as a command.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from kailab import cli, evidence, labdir, outfile, partitions, shards
from kailab.classroom import credentials, grading
from kailab.classroom import joined as joined_mod
from kailab.classroom.records import RUNNING, record_name
from kailab.errors import KailabError
from kailab.labels import JOINED_LABEL, LEARNER_LABEL, RECORD_LABEL
from kailab.labstate import DamagedState, LabState
from kailab.paths import EXERCISES

# -- running a command in this process -----------------------------------------------------------------------------


class Hang(Exception):
    """A command still running after the guard's seconds."""


@contextlib.contextmanager
def hang_guard(seconds: float = 30):
    """SIGALRM after ``seconds``: a blocking open (a FIFO) or an endless loop ends the test as a failure, not a hang.
    A hang guard, not a speed target."""

    def alarm(signum, frame):
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Ran:
    code: int
    out: str
    err: str

    @property
    def said(self) -> str:
        return " ".join((self.out + self.err).split())


def run(monkeypatch, capsys, home: Path, *args: str, cwd: Path | None = None, env: dict | None = None) -> Ran:
    """``kailab ARGS`` in this process (with ``KAILAB_HOME=home``): its exit code and output, within the guard."""
    monkeypatch.setenv("KAILAB_HOME", str(home))
    monkeypatch.delenv("KAILAB_DEBUG", raising=False)
    monkeypatch.delenv("KAILAB_KUBECONFIG", raising=False)
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    if cwd is not None:
        monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", ["kailab", *args])
    capsys.readouterr()
    code = 0
    with hang_guard():
        try:
            cli.main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return Ran(code, out, err)


def no_traceback(r: Ran) -> None:
    for words in ("Traceback", "Unexpected error", "Exception ignored"):
        assert words not in r.err, r.err


# -- the user's own files: a snapshot before, the same after --------------------------------------------------------


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root``: a file's hash, a link's target, a folder, a FIFO — what the user has."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[str(p)] = "link " + os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                out[str(p)] = "file " + hashlib.sha256(p.read_bytes()).hexdigest() + f" {oct(st.st_mode)}"
            else:
                out[str(p)] = f"mode {oct(st.st_mode)}"
    return out


@pytest.fixture
def user(tmp_path) -> Path:
    """A folder of the user's own: notes, a secret, a folder of work. Nothing kailab does may change it."""
    mine = tmp_path / "user"
    (mine / "work").mkdir(parents=True)
    (mine / "notes.md").write_text("# my notes\nnever to be replaced\n")
    (mine / "secret.txt").write_text("token: s3cret {\n")  # text that is no file kailab reads, whatever it wants
    (mine / "work" / "a.yaml").write_text("a: 1\n")
    return mine


# -- kinds of file that are not what a command wants ----------------------------------------------------------------

HUGE = 1 << 30  # sparse: larger than any limit, nothing written
KINDS = ["fifo", "device", "link-out", "huge", "empty", "binary", "folder", "list", "scalar"]


def make(kind: str, path: Path, user: Path) -> None:
    """``path`` made a file of ``kind``; ``link-out`` points at the user's secret, outside every folder of kailab's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        try:
            os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's: an endless read
        except OSError:
            path.symlink_to("/dev/zero")
    elif kind == "link-out":
        path.symlink_to(user / "secret.txt")
    elif kind == "huge":
        with open(path, "wb") as fh:
            fh.truncate(HUGE)
    elif kind == "empty":
        path.write_text("")
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 8)
    elif kind == "folder":
        path.mkdir()
    elif kind == "list":
        path.write_text("[1, 2, 3]\n")
    elif kind == "scalar":
        path.write_text("a sentence, not a mapping\n")
    else:
        raise AssertionError(kind)


# -- commands that read a file the user names ------------------------------------------------------------------------

# (name, argv with FILE for the file): each refuses every kind of bad file with one message that names it
READERS = [
    ("run", ["run", "FILE"]),
    ("up --fleet", ["up", "--runtime", "local", "--fleet", "FILE"]),
    ("class up --roster", ["class", "up", "--roster", "FILE"]),
    ("join", ["join", "FILE"]),
    ("lesson --task --file", ["lesson", "quota", "--task", "1", "--file", "FILE"]),
    ("challenge --file", ["challenge", "ticket-1", "--file", "FILE"]),
    ("up --runtime existing --kubeconfig", ["up", "--runtime", "existing", "--kubeconfig", "FILE"]),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command, argv", READERS, ids=[c for c, _ in READERS])
def test_every_reader_refuses_every_kind_of_bad_file_in_one_message(
    tmp_path, user, monkeypatch, capsys, command, argv, kind
):
    path = tmp_path / "in" / "given.yaml"
    make(kind, path, user)
    before = snapshot(user)
    r = run(monkeypatch, capsys, tmp_path / "lab", *[str(path) if a == "FILE" else a for a in argv], cwd=tmp_path)
    no_traceback(r)
    assert r.code == 1, r
    assert r.err.count("✗ Error:") == 1, r.err
    named = str(path) if kind != "link-out" else (str(path), str(user / "secret.txt"))
    assert any(n in r.said for n in ([named] if isinstance(named, str) else named)), r.said
    assert snapshot(user) == before
    assert not (tmp_path / "lab" / "lab.json").exists()  # nothing started


# Wrong types in each field of a fleet file, a scenario and a class credential: one file:line message each.

WRONG = [[], {}, "text", 1.5, True, None, -1, 10**30]


def _fields(doc, prefix=()):
    """Every (path, value) in a parsed document, mappings and lists walked."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*prefix, k), v
            yield from _fields(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield (*prefix, i), v
            yield from _fields(v, (*prefix, i))


def _replaced(doc, path, value):
    doc = json.loads(json.dumps(doc))
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return doc


FLEET = yaml.safe_load((EXERCISES.parent / "manifests" / "fleet.yaml").read_text())
SCENARIO = yaml.safe_load((EXERCISES / "quota.yaml").read_text())


def _wrong_cases(doc, wrong_values=WRONG):
    cases = []
    for path, value in _fields(doc):
        for wrong in wrong_values:
            if type(wrong) is not type(value):
                cases.append((path, wrong))
    return cases


@pytest.mark.parametrize("path, wrong", _wrong_cases(FLEET), ids=lambda x: str(x)[:40])
def test_a_fleet_file_with_a_wrong_type_in_any_field_says_file_and_line(tmp_path, path, wrong):
    from kailab.fleet import load_fleet

    f = tmp_path / "fleet.yaml"
    f.write_text(yaml.safe_dump(_replaced(FLEET, path, wrong)))
    with hang_guard():
        try:
            load_fleet(f)
        except KailabError as e:
            assert re.match(rf"{re.escape(str(f))}:\d+: ", e.message), e.message
            return
    # a value of another type that is still a fleet (a label value as text): it loaded, and that is fine


@pytest.mark.parametrize("path, wrong", _wrong_cases(SCENARIO, [[], {}, True]), ids=lambda x: str(x)[:40])
def test_a_scenario_with_a_wrong_type_in_any_field_says_file_and_line(tmp_path, path, wrong):
    from kailab.errors import ScenarioError
    from kailab.scenarios.loader import load_scenario

    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(_replaced(SCENARIO, path, wrong), sort_keys=False))
    with hang_guard():
        try:
            load_scenario(f)
        except ScenarioError as e:
            assert re.match(rf"{re.escape(str(f))}:\d+: ", e.message), e.message


def class_credential(learner="ann", server="https://127.0.0.1:1", token="tok") -> dict:
    import base64

    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n").decode()
    return credentials.kubeconfig(learner, server, ca, token, "kailab-class@" + server.split("://", 1)[-1])


def with_credential(tmp_path: Path, argv: list[str]) -> list[str]:
    """``argv`` with its CRED the path of a learner's credential (class_credential) written in ``tmp_path``."""
    cred = tmp_path / "ann.kubeconfig"
    cred.write_text(yaml.safe_dump(class_credential()))
    return [str(cred) if a == "CRED" else a for a in argv]


@pytest.mark.parametrize("path, wrong", _wrong_cases(class_credential()), ids=lambda x: str(x)[:40])
def test_join_with_a_wrong_type_in_any_field_of_the_credential_is_one_message(
    tmp_path, monkeypatch, capsys, path, wrong
):
    f = tmp_path / "ann.kubeconfig"
    f.write_text(yaml.safe_dump(_replaced(class_credential(), path, wrong)))
    r = run(monkeypatch, capsys, tmp_path / "lab", "join", str(f))
    no_traceback(r)
    assert r.code == 1 and r.err.count("✗ Error:") == 1, r.err
    assert str(f) in r.said or f.name in r.said, r.said
    assert not (tmp_path / "lab" / joined_mod.FILE).exists()


# -- kailab's own files in its lab folder ---------------------------------------------------------------------------


def lab_folder(home: Path) -> Path:
    labdir.claim(home)
    return home


OWN_STATE = [
    ("lab.json", ["status"], "The lab's state file"),
    ("lab.json", ["kubeconfig"], "The lab's state file"),
    ("lab.json", ["up", "--runtime", "local"], "The lab's state file"),
    (joined_mod.FILE, ["status"], "record of the class it joined"),
    (joined_mod.FILE, ["demo", "quota"], "record of the class it joined"),
    (joined_mod.FILE, ["join", "CRED"], "record of the class it joined"),
]


@pytest.mark.parametrize("kind", [*KINDS, "wrong-types"])
@pytest.mark.parametrize("name, argv, words", OWN_STATE, ids=[f"{n}-{a[0]}" for n, a, _ in OWN_STATE])
def test_a_damaged_state_file_names_itself_and_down_clears_it(
    tmp_path, user, monkeypatch, capsys, name, argv, words, kind
):
    home = lab_folder(tmp_path / "lab")
    path = home / name
    if kind == "wrong-types":
        path.write_text(json.dumps({"runtime": 5, "kubeconfig": [], "learner": {}, "total_gpus": "x"}))
    else:
        make(kind, path, user)
    args = with_credential(tmp_path, argv)
    before = snapshot(user)
    r = run(monkeypatch, capsys, home, *args)
    no_traceback(r)
    assert r.code == 1, r
    assert words in r.said and str(path) in r.said, r.said
    assert "kailab down" in r.said, r.said  # the one command that clears it
    down = run(monkeypatch, capsys, home, "down")
    no_traceback(down)
    assert down.code == 0, down
    assert not os.path.lexists(path), sorted(p.name for p in home.iterdir())
    assert snapshot(user) == before


NOT_A_FOLDER = ["fifo", "device", "link-out", "huge", "empty", "binary"]


@pytest.mark.parametrize("kind", NOT_A_FOLDER)
@pytest.mark.parametrize(
    "argv",
    [["status"], ["down"], ["demo", "quota"], ["class", "status"], ["join", "CRED"], ["up", "--runtime", "local"]],
)
def test_a_lab_folder_that_is_not_a_folder_is_said_as_such(tmp_path, user, monkeypatch, capsys, argv, kind):
    home = tmp_path / "lab"
    make(kind, home, user)
    args = with_credential(tmp_path, argv)
    before = snapshot(user)
    r = run(monkeypatch, capsys, home, *args)
    no_traceback(r)
    assert r.code == 1 and r.err.count("✗ Error:") == 1, r
    assert f"The lab folder {home} is " in r.said and "not a folder" in r.said, r.said
    assert snapshot(user) == before and not home.is_dir()


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "link-out"])
@pytest.mark.parametrize("argv", [["queues"], ["explain", "pod"], ["evidence"], ["bench"]])
def test_a_kubeconfig_named_by_kailab_kubeconfig_is_read_by_the_same_rule(
    tmp_path, user, monkeypatch, capsys, argv, kind
):
    path = tmp_path / "in" / "kubeconfig"
    make(kind, path, user)
    r = run(monkeypatch, capsys, tmp_path / "lab", *argv, env={"KAILAB_KUBECONFIG": str(path)})
    no_traceback(r)
    assert r.code == 1 and r.err.count("✗ Error:") == 1, r
    assert str(path) in r.said and "is missing" not in r.said, r.said  # what it is, not that it is not there


@pytest.mark.parametrize("kind", ["missing", *KINDS])
def test_a_joined_folders_damaged_credential_names_itself_and_down_clears_the_join(
    tmp_path, user, monkeypatch, capsys, kind
):
    home = lab_folder(tmp_path / "lab")
    cred = tmp_path / "creds" / "ann.kubeconfig"
    if kind == "missing":
        cred.parent.mkdir()
    else:
        make(kind, cred, user)
    outfile.write_own(home / joined_mod.FILE, json.dumps({"learner": "ann", "kubeconfig": str(cred)}), root=home)
    before = snapshot(user)
    for argv in (["queues"], ["demo", "quota"], ["explain", "pod"]):
        r = run(monkeypatch, capsys, home, *argv)
        no_traceback(r)
        assert r.code == 1 and r.err.count("✗ Error:") == 1, r
        assert str(cred) in r.said and "kailab down, then kailab join FILE" in r.said, r.said
    down = run(monkeypatch, capsys, home, "down")
    no_traceback(down)
    assert "this folder has left the class" in down.said and not os.path.lexists(home / joined_mod.FILE), down
    assert snapshot(user) == before


@pytest.mark.parametrize("kind", ["fifo", "device", "link-out", "folder"])
@pytest.mark.parametrize("name", [".lock", "build-times.json", ".write-test"])
def test_the_binary_caches_own_files_are_never_waited_on_nor_written_through(tmp_path, user, name, kind):
    """The build cache (``KAILAB_CACHE``) is kailab's own folder too: its build lock, its build times and the file
    that tried whether it can be written."""
    from kailab import build
    from kailab.versions import PROMETHEUS_BUILD

    cache = tmp_path / "cache"
    make(kind, cache / name, user)
    before = snapshot(user)
    with hang_guard():
        build.check_cache(cache)  # it writes a file of a new name to try
        try:
            build._record_build_time(cache, PROMETHEUS_BUILD, 1.0)
            with build._locked(cache):
                pass
        except KailabError as e:
            assert name == ".lock" and str(cache / name) in e.message, e.message
    assert snapshot(user) == before


@pytest.mark.parametrize("kind", KINDS)
def test_the_verdicts_file_is_never_written_through_nor_read_as_anything_but_kailabs(tmp_path, user, kind):
    home = lab_folder(tmp_path / "lab")
    path = home / evidence.PENDING
    make(kind, path, user)
    before = snapshot(user)
    with hang_guard():
        if kind in ("empty", "list", "scalar", "binary", "huge"):  # a file: what is not a verdict is left out
            evidence.check_recordable(home)
            try:
                assert evidence.pending_verdicts(home, []) == []
            except KailabError as e:  # too large, or not text
                assert str(path) in e.message
            evidence.record_verdict(home, {"scenario": "x"})
        else:
            with pytest.raises(KailabError) as err:
                evidence.check_recordable(home)
            assert str(path) in err.value.message
            with pytest.raises(KailabError):
                evidence.record_verdict(home, {"scenario": "x"})
            with pytest.raises(KailabError) as err:
                evidence.pending_verdicts(home)
            assert str(path) in err.value.message
    assert snapshot(user) == before


def test_a_verdicts_file_with_damaged_lines_keeps_the_good_ones_and_says_the_others(tmp_path):
    from kailab.checks import Check, Verdict

    home = lab_folder(tmp_path / "lab")
    good = Verdict("quota", "Quota", [Check("a", "1", "1", True)], seconds=1.0).to_record()
    evidence.record_verdict(home, good)
    with open(home / evidence.PENDING, "a") as fh:
        for bad in ("not json", "[]", json.dumps({**good, "seconds": "x"}), json.dumps({**good, "timeline": [5]})):
            fh.write(bad + "\n")
        fh.write(json.dumps({**good, "title": "\x1b]0;pwned\x07T"}) + "\n")  # a title is text: kept, shown plain
    skipped: list[str] = []
    kept = evidence.pending_verdicts(home, skipped)
    assert [v["scenario"] for v in kept] == ["quota", "quota"]
    assert [s.split(":")[0] for s in skipped] == ["line 2", "line 3", "line 4", "line 5"], skipped


# -- commands that write: a file in the way, a symbolic link, a read-only folder ----------------------------------------


@contextlib.contextmanager
def read_only(folder: Path):
    """``folder`` read-only for this process: a read-only mount where root ignores file modes, else chmod."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"root here, and no read-only mount for the test: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)


class FakeHost:
    """What runs a class's schedulers (a PartitionHost), as the class commands see it: every learner's scheduler
    runs; the class is never changed."""

    def __init__(self, home: Path, folder: Path | None = None):
        self.home, self.folder = home, folder or home

    def control(self, kube, learner):
        return SimpleNamespace(running=lambda: True)

    def check(self, kube, adding, available):
        raise AssertionError("the class was changed before its output was checked")


def record(learner: str, lesson: str, /, **data) -> SimpleNamespace:
    """A lesson record as the client lists it (ConfigMap): ``data`` over a PASS record of kailab's own."""
    base = {
        "lesson": lesson,
        "title": lesson.capitalize(),
        "outcome": "PASS",
        "started": "2026-11-24T09:00:00+00:00",
        "finished": "2026-11-24T09:01:00+00:00",
        "seconds": "60.0",
        "prediction": "team-a gets 8",
        "predictions": "[]",
        "right": "",
        "verdict": "{}",
        "timeline": json.dumps([[0, {f"{learner}-team-a": 0}], [1.5, {f"{learner}-team-a": 8}]]),
    }
    labels = {LEARNER_LABEL: learner, RECORD_LABEL: lesson}
    meta = SimpleNamespace(name=record_name(lesson), namespace=f"{learner}-kailab-{lesson}", labels=labels)
    return SimpleNamespace(metadata=meta, data={**base, **data})


class FakeKube:
    """The instructor's client, as class status reads it: each learner's records, the namespaces they are in (each
    labelled as its learner's, the one before its first "-"), no pods."""

    def __init__(self, records):
        self.records = records

        def configmaps(label_selector, limit=None, _preload_content=True):
            if label_selector == JOINED_LABEL:  # join marks (classroom/joined.py), read as the API's JSON: none
                return SimpleNamespace(data=json.dumps({"items": []}))
            if label_selector.startswith(grading.SUBMITTED_LABEL + ","):  # tasks handed in (classroom/grading.py)
                handed = [r for r in self.records if grading.SUBMITTED_LABEL in r.metadata.labels]
                return SimpleNamespace(items=handed, metadata=SimpleNamespace(_continue=None))
            learner = label_selector.split(",")[0].split("=")[1]
            items = [r for r in self.records if r.metadata.labels.get(LEARNER_LABEL) == learner]
            return SimpleNamespace(items=items[:limit], metadata=SimpleNamespace(_continue=None))

        def namespaces(label_selector):  # every learner's at once: "<lab id label> in (<their ids>)"
            names = sorted({r.metadata.namespace for r in self.records})
            return SimpleNamespace(
                items=[
                    SimpleNamespace(metadata=SimpleNamespace(name=n, labels=partitions.owner(n.split("-")[0]).labels))
                    for n in names
                    if partitions.owner(n.split("-")[0]).lab_id in label_selector
                ]
            )

        self.core = SimpleNamespace(
            list_config_map_for_all_namespaces=configmaps,
            list_namespace=namespaces,
            list_namespaced_secret=lambda namespace, label_selector: SimpleNamespace(items=[]),  # no task stored
        )
        self.pods = lambda namespace=None: []
        # the API server as the instructor's kubeconfig names it (class up names it in each learner's kubeconfig)
        self.api = SimpleNamespace(configuration=SimpleNamespace(host="https://127.0.0.1:6443"))

    def list(self, api_version, kind, **_):
        """Each learner's SchedulingShard, for their partition and in effect (their scheduler runs)."""
        assert kind == shards.KIND, kind
        available = {"type": "Available", "status": "True", "observedGeneration": 1}
        return [
            {
                "metadata": {"name": shards.shard_name(learner), "generation": 1},
                "spec": {"partitionLabelValue": learner},
                "status": {"conditions": [available]},
            }
            for learner in sorted({r.metadata.labels.get(LEARNER_LABEL) for r in self.records} - {None})
        ]


@pytest.fixture
def a_class(monkeypatch, tmp_path):
    """A class of ann and bob with a PASS each (the real class, on a host that runs nothing, its state file in a lab
    folder of its own); the test may add records."""
    from kailab.lab import Lab, OwnLab
    from kailab.partitions import Partitions
    from kailab.runtimes.base import Capabilities

    records = [record("ann", "quota"), record("bob", "quota")]
    host = FakeHost(lab_folder(tmp_path / "class-lab"))
    Partitions(host).write(["ann", "bob"])

    def opened(home: Path | None = None) -> OwnLab:
        own = OwnLab(host.home)
        own.__dict__.update(
            runtime=SimpleNamespace(traits=SimpleNamespace(name="local", makes_cluster=True)),
            capabilities=Capabilities(partitions=host),
        )
        own.__dict__["kube"] = FakeKube(records)
        return own

    monkeypatch.setattr(Lab, "open", staticmethod(opened))
    return records


TARGETS = ["user-file", "link-out", "folder", "fifo", "read-only"]


def _in_the_way(target: str, path: Path, user: Path):
    if target == "user-file":
        path.write_text("# hand-written class notes\n")
    elif target == "link-out":
        path.symlink_to(user / "notes.md")
    elif target == "folder":
        path.mkdir()
    elif target == "fifo":
        os.mkfifo(path)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["class-report.md", "page.html"])
def test_class_evidence_never_writes_over_or_through_what_is_there(
    tmp_path, user, monkeypatch, capsys, a_class, target, name
):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    folder = cwd / "ro" if target == "read-only" else cwd
    with read_only(folder) if target == "read-only" else contextlib.nullcontext(folder):
        path = folder / name
        _in_the_way(target, path, user)
        before, mine = snapshot(user), snapshot(cwd)
        args = ["class", "evidence"] + ([] if name == "class-report.md" and folder == cwd else ["--out", str(path)])
        r = run(monkeypatch, capsys, tmp_path / "lab", *args, cwd=cwd)
        no_traceback(r)
        assert r.code == 1 and r.err.count("✗ Error:") == 1, r
        assert name in r.said, r.said
        assert snapshot(user) == before and snapshot(cwd) == mine  # no file written, none changed


def test_class_evidence_replaces_its_own_page_but_not_one_changed_since_and_force_says_so(
    tmp_path, user, monkeypatch, capsys, a_class
):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    first = run(monkeypatch, capsys, tmp_path / "lab", "class", "evidence", cwd=cwd)
    assert first.code == 0, first
    page = cwd / "class-report.md"
    assert outfile.kailab_wrote(page.read_bytes()) and (cwd / "class-report-timelines" / "ann.png").exists()
    again = run(monkeypatch, capsys, tmp_path / "lab", "class", "evidence", cwd=cwd)
    assert again.code == 0, again  # its own page, unchanged since: replaced
    page.write_text(page.read_text() + "\nMy remarks on the class.\n")  # the instructor's edit
    edited = page.read_bytes()
    refused = run(monkeypatch, capsys, tmp_path / "lab", "class", "evidence", cwd=cwd)
    assert refused.code == 1 and "kailab did not write" in refused.said and "--force" in refused.said, refused
    assert page.read_bytes() == edited
    (cwd / "link.md").symlink_to(user / "notes.md")
    before = snapshot(user)
    forced = run(monkeypatch, capsys, tmp_path / "lab", "class", "evidence", "--out", "link.md", "--force", cwd=cwd)
    assert forced.code == 0, forced
    assert not (cwd / "link.md").is_symlink() and snapshot(user) == before  # the link replaced, never its target


@pytest.mark.parametrize("target", ["user-file", "link-out", "folder", "read-only", "out-is-a-file"])
def test_class_up_out_refuses_before_anything_is_applied(tmp_path, user, monkeypatch, capsys, a_class, target):
    out = tmp_path / "creds"
    if target == "out-is-a-file":
        out.write_text("not a folder")
    ctx = read_only(out) if target == "read-only" else contextlib.nullcontext(out)
    with ctx:
        if target != "out-is-a-file":
            out.mkdir(exist_ok=True)
        if target in ("user-file", "link-out", "folder"):
            _in_the_way(target, out / "ann.kubeconfig", user)
        before = snapshot(tmp_path)
        r = run(monkeypatch, capsys, tmp_path / "lab", "class", "up", "--learner", "cid", "--out", str(out))
        no_traceback(r)
        assert r.code == 1 and r.err.count("✗ Error:") == 1, r  # FakeClass.up fails the test if it was reached
        assert str(out) in r.said, r.said
        assert snapshot(tmp_path) == before


@pytest.mark.parametrize("target", ["user-file", "link-out", "folder", "fifo", "full-folder", "read-only"])
def test_evidence_out_never_writes_over_anything(tmp_path, user, monkeypatch, target):
    out = tmp_path / "ev"
    _in_the_way(target.replace("full-", ""), out, user)
    if target == "full-folder":
        (out / "report.md").write_text("mine")
    before = snapshot(tmp_path)
    ctx = read_only(tmp_path / "ro") if target == "read-only" else contextlib.nullcontext()
    with ctx, hang_guard():
        where = tmp_path / "ro" / "ev" if target == "read-only" else out
        with pytest.raises((FileExistsError, OSError)):
            evidence.write_snapshot({"report.md": "x"}, [], where)
    if target != "read-only":
        assert snapshot(tmp_path) == before


@pytest.mark.parametrize("target", ["link-out", "folder", "fifo"])
def test_lab_state_and_its_marker_are_never_written_through_or_over_what_kailab_did_not_make(tmp_path, user, target):
    home = lab_folder(tmp_path / "lab")
    _in_the_way(target, home / "lab.json", user)
    before = snapshot(user)
    with hang_guard(), pytest.raises(KailabError) as err:
        LabState("local", str(home / "kubeconfig.yaml")).write(home)
    assert str(home / "lab.json") in err.value.message
    assert snapshot(user) == before
    other = tmp_path / "other"
    other.mkdir()
    (other / labdir.MARKER).symlink_to(user / "notes.md")  # a marker that is a link is not kailab's
    with pytest.raises(KailabError):
        labdir.claim(other)
    assert snapshot(user) == before


@pytest.mark.parametrize("target", ["user-file", "link-out", "read-only"])
def test_a_tasks_copy_is_written_only_where_nothing_is(tmp_path, user, monkeypatch, capsys, target):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    copy = cwd / "kailab-tasks" / "quota-task-1.yaml"
    ctx = read_only(cwd / "kailab-tasks") if target == "read-only" else contextlib.nullcontext()
    with ctx:
        if target == "user-file":
            copy.parent.mkdir()
            copy.write_text("mine: true\n")
        elif target == "link-out":
            copy.parent.mkdir()
            copy.symlink_to(user / "work" / "a.yaml")
        before = snapshot(tmp_path)
        r = run(monkeypatch, capsys, tmp_path / "lab", "lesson", "quota", "--task", "1", cwd=cwd)
        no_traceback(r)
        assert r.code == 1, r  # not a scenario, or not writable: said; never replaced
        assert snapshot(tmp_path) == before


def test_a_recording_is_written_whole_and_never_over_a_file_that_is_not_one(tmp_path, user):
    from kailab.scenarios.run import Recorder

    class NoChanges:
        def next(self, timeout):
            return None

        def close(self):
            pass

    (tmp_path / "rec").symlink_to(user / "secret.txt")
    before = snapshot(user)
    with pytest.raises(KailabError):
        Recorder(NoChanges(), tmp_path / "rec", 0.0)
    (tmp_path / "notes.jsonl").write_text("my notes\n")
    with pytest.raises(KailabError):
        Recorder(NoChanges(), tmp_path / "notes.jsonl", 0.0)
    new = Recorder(NoChanges(), tmp_path / "new" / "changes.jsonl", 0.0)
    assert not (tmp_path / "new" / "changes.jsonl").exists()  # whole, at the end
    new.close()
    assert (tmp_path / "new" / "changes.jsonl").read_text() == ""
    again = Recorder(NoChanges(), tmp_path / "new" / "changes.jsonl", 0.0)  # a recording of kailab's: replaced
    again.close()
    assert snapshot(user) == before


@pytest.mark.parametrize("target", ["link-out", "another-learner", "instructors-lab"])
def test_join_refuses_a_folder_that_is_not_free_for_it(tmp_path, user, monkeypatch, capsys, target):
    home = lab_folder(tmp_path / "lab")
    if target == "link-out":
        (home / joined_mod.FILE).symlink_to(user / "secret.txt")
    elif target == "another-learner":
        (home / joined_mod.FILE).write_text(json.dumps({"learner": "bob", "kubeconfig": "/x/bob.kubeconfig"}))
    else:
        LabState("local", str(home / "kubeconfig.yaml")).write(home)
    cred = tmp_path / "ann.kubeconfig"
    cred.write_text(yaml.safe_dump(class_credential()))
    monkeypatch.setattr(joined_mod, "whoami", lambda kube, path: credentials.username("ann"))
    before, there = snapshot(user), snapshot(home)
    r = run(monkeypatch, capsys, home, "join", str(cred))
    no_traceback(r)
    assert r.code == 1 and r.err.count("✗ Error:") == 1, r
    words = {"link-out": "symbolic link", "another-learner": "as bob", "instructors-lab": "holds a lab of its own"}
    assert words[target] in r.said, r.said
    assert snapshot(user) == before and snapshot(home) == there


# -- records a learner writes: each checked whole; a bad one never stops the class's view -------------------------------

BAD_RECORDS = {
    "no time zone": {"started": "2026-11-24T09:00:00"},
    "timeline of numbers": {"timeline": "[1, 2, 3]"},
    "timeline not JSON": {"timeline": "[[0, {"},
    "queue name with markup": {"timeline": json.dumps([[0, {"$\\frac{a}$": 1}]])},
    "outcome unknown": {"outcome": "PASSED WITH HONOURS"},
    "predictions of numbers": {"predictions": "[1, 2]"},
    "graded with a wrong mark": {"predictions": json.dumps([{"key": "k", "mark": "perfect"}])},
    "seconds as words": {"seconds": "forever"},
    "huge title": {"title": "x" * 100_000},
    "deep JSON": {"verdict": "[" * 100_000 + "]" * 100_000},
    "lesson not a name": {"lesson": "../../etc"},
    "a time that is not one": {"finished": "yesterday"},
    "running without a start": {"outcome": RUNNING, "started": ""},
}


def _forged(learner):
    """bob's record written in bob's namespace but labelled as ann's: never ann's."""
    r = record(learner, "gang")
    r.metadata.labels = {LEARNER_LABEL: "ann", RECORD_LABEL: "gang"}
    return r


@pytest.mark.parametrize("why, data", list(BAD_RECORDS.items()), ids=list(BAD_RECORDS))
def test_a_bad_record_is_said_as_unreadable_and_everyone_elses_status_and_page_still_show(
    tmp_path, monkeypatch, capsys, a_class, why, data
):
    a_class.append(record("ann", "gang", **data))
    r = run(monkeypatch, capsys, tmp_path / "lab", "class", "status")
    no_traceback(r)
    assert r.code == 0, r
    assert "ann: record unreadable (ann-kailab-gang/kailab-record: " in r.said, r.said
    assert "bob (scheduler running): quota PASS" in r.said and "ann (scheduler running): quota PASS" in r.said
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    page = run(monkeypatch, capsys, tmp_path / "lab", "class", "evidence", "--out", "c.html", cwd=cwd)
    assert page.code == 0, page
    text = (cwd / "c.html").read_text()
    assert "record unreadable" in text and "quota PASS" in text  # ann's and bob's quota, in the per-learner summary
    as_json = run(monkeypatch, capsys, tmp_path / "lab", "class", "status", "--json")
    report = json.loads(as_json.out)
    assert [u["record"] for u in report["ann"]["unreadable"]] == ["ann-kailab-gang/kailab-record"]
    assert set(report["ann"]["lessons"]) == {"quota"} and set(report["bob"]["lessons"]) == {"quota"}


def test_a_record_labelled_as_another_learners_is_never_theirs(tmp_path, monkeypatch, capsys, a_class):
    a_class.append(_forged("bob"))
    report = json.loads(run(monkeypatch, capsys, tmp_path / "lab", "class", "status", "--json").out)
    assert "gang" not in report["ann"]["lessons"]
    assert report["ann"]["unreadable"][0]["record"] == "bob-kailab-gang/kailab-record"


def test_more_records_than_a_class_holds_are_said_and_the_rest_read(tmp_path, monkeypatch, capsys, a_class):
    from kailab.classroom.record_data import MAX_RECORDS

    a_class.extend(record("ann", f"task-{i}") for i in range(MAX_RECORDS + 50))
    report = json.loads(run(monkeypatch, capsys, tmp_path / "lab", "class", "status", "--json").out)
    assert any(f"more than {MAX_RECORDS} records" in u["why"] for u in report["ann"]["unreadable"])
    assert report["bob"]["lessons"]["quota"]["outcome"] == "PASS"


def test_a_learners_many_long_timelines_are_drawn_within_a_bound(tmp_path, monkeypatch, capsys, a_class):
    """A record is a learner's to write: as many as class status reads, each with the longest timeline a record
    holds, are drawn as the first PANELS lessons, each from at most DRAWN_POINTS points and DRAWN_QUEUES queues."""
    from kailab.classroom.record_data import MAX_JSON, MAX_POINTS
    from kailab.classroom.report import PANELS
    from kailab.evidence import DRAWN_POINTS, drawn

    long = [[i, {f"ann-q{j}": (i + j) % 8 for j in range(3)}] for i in range(MAX_POINTS)]
    assert len(json.dumps(long)) <= MAX_JSON  # the longest a record holds
    a_class.extend(record("ann", f"task-{i:02d}", timeline=json.dumps(long)) for i in range(PANELS + 6))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    page = run(monkeypatch, capsys, tmp_path / "lab", "class", "evidence", "--out", "c.html", cwd=cwd)
    assert page.code == 0, page
    assert f"GPU timelines: ann (the first {PANELS} of {PANELS + 7} drawn)" in (cwd / "c.html").read_text()
    thinned = drawn(long)
    assert len(thinned) <= DRAWN_POINTS + 1 and thinned[0] == long[0] and thinned[-1] == long[-1]
    assert drawn(long[:10]) == long[:10]


# -- printed text fields: escape sequences never reach a terminal ----------------------------------------------------

ESCAPES = {
    "clear screen (CSI)": "\x1b[2J\x1b[H",
    "window title (OSC 0)": "\x1b]0;owned\x07",
    "clipboard (OSC 52)": "\x1b]52;c;cm0gLXJmIH4K\x1b\\",
    "hyperlink (OSC 8)": "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\",
    "8-bit CSI (C1)": "\x9b2J",
    "carriage return over a line": "PASS\rFAIL",
    "backspace": "PASS\x08\x08\x08\x08FAIL",
    "bidi override": "\u202eSSAP\u202c",
    "device control string": "\x1bP+q544e\x1b\\",
    "reset (ESC c)": "\x1bc",
    "NUL and BEL": "a\x00b\x07c",
}
OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> bool:
    """Nothing in ``text`` a terminal would obey rather than show."""
    return OBEYED.search(text) is None


@pytest.mark.parametrize("name, seq", list(ESCAPES.items()), ids=list(ESCAPES))
def test_text_in_a_learners_record_never_reaches_the_terminal_as_a_command(
    tmp_path, monkeypatch, capsys, a_class, name, seq
):
    a_class[0] = record(
        "ann",
        "quota",
        title=f"T{seq}",
        prediction=f"p{seq}",
        predictions=json.dumps(
            [{"key": "k", "ask": f"a{seq}", "given": f"g{seq}", "answer": f"x{seq}", "mark": "right"}]
        ),
        right=f"1{seq}",
        timeline=json.dumps([[0, {f"ann-q{seq}": 0}], [1.5, {f"ann-q{seq}": 8}]]),
    )
    r = run(monkeypatch, capsys, tmp_path / "lab", "class", "status")
    no_traceback(r)
    assert r.code == 0 and clean(r.out + r.err), repr(r.out + r.err)
    assert "predicted" in r.out and "bob (scheduler running)" in r.out
    as_json = run(monkeypatch, capsys, tmp_path / "lab", "class", "status", "--json")
    assert clean(as_json.out)  # JSON writes them as \\uXXXX
    (tmp_path / "cwd").mkdir()
    for page in ("page.md", "page.html"):  # the page, and its timelines drawn without a warning on the terminal
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            written = run(
                monkeypatch, capsys, tmp_path / "lab", "class", "evidence", "--out", page, cwd=tmp_path / "cwd"
            )
        assert written.code == 0 and clean(written.out + written.err), repr(written.out + written.err)
        assert clean((tmp_path / "cwd" / page).read_text())


@pytest.mark.parametrize("name, seq", list(ESCAPES.items()), ids=list(ESCAPES))
def test_text_in_a_scenario_and_its_file_name_never_reaches_the_terminal_as_a_command(
    tmp_path, monkeypatch, capsys, name, seq
):
    from rich.console import Console

    from kailab import render
    from kailab.progress import Progress
    from kailab.scenarios.engine import Engine
    from kailab.scenarios.loader import load_scenario
    from kailab.scenarios.replay import ReplayCluster

    path = tmp_path / "s.yaml"
    wait = {"wait": [{"queue": "q", "title": f"w{seq}", "running": 1}], "note": f"n{seq}", "timeout": "1s"}
    doc = {
        "name": "marked",
        "title": f"t{seq}",
        "queues": [{"name": "q"}],
        "workloads": [{"name": "w", "queue": "q", "pods": 1, "gpus": 1}],
        "steps": [{"apply": "w"}, wait],
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))  # YAML writes the controls as escapes (\e, \x9b …)
    scenario = load_scenario(path)
    verdict = Engine(ReplayCluster([], node_gpus=[8]), Progress()).run(scenario)
    render.print_verdicts([verdict], as_json=False)
    out, err = capsys.readouterr()
    assert "FAIL" in out and "Wait" in err
    assert clean(out + err), repr(out + err)
    assert isinstance(render.stdout, Console)
    weird = tmp_path / f"x{seq.replace(chr(0), '')}.yaml"  # a file name is user text too
    r = run(monkeypatch, capsys, tmp_path / "lab", "run", str(weird))
    no_traceback(r)
    assert r.code == 1 and clean(r.out + r.err), repr(r.err)


@pytest.mark.parametrize("name, seq", list(ESCAPES.items()), ids=list(ESCAPES))
def test_every_renderer_prints_user_and_cluster_text_plain(capsys, name, seq):
    """The consoles themselves: whatever a table, a line or a Text holds (a pod's name, KAI's event message)."""
    from rich.table import Table
    from rich.text import Text

    from kailab import render
    from kailab.progress import Progress

    table = Table(title=f"t{seq}")
    table.add_column(f"c{seq}")
    table.add_row(f"cell{seq}")
    table.add_row(Text(f"styled{seq}", style="red"))
    render.stdout.print(table)
    render.stdout.print(Text.assemble(("x", "bold"), f" {seq}"))
    render.stdout.print(render.queue_table([dict.fromkeys(("name", "parent"), f"q{seq}") | _queue_numbers()]))
    progress = Progress()
    with progress.step(f"step{seq}") as st:
        st.note(f"note{seq}")
    progress.info(f"info{seq}")
    out, err = capsys.readouterr()
    assert clean(out + err), repr(out + err)
    assert "cell" in out and "step" in err


@pytest.mark.parametrize("name, seq", list(ESCAPES.items()), ids=list(ESCAPES))
def test_a_snapshots_text_files_hold_nothing_a_terminal_obeys(tmp_path, name, seq):
    """A snapshot a learner hands in is read with cat: report.md and the tables (pods.txt, events.txt, nodes.txt,
    queues.md) carry user and cluster text plain; YAML and JSON write such characters as escapes."""
    from kailab.checks import Check, Verdict
    from kailab.evidence import _table, render_report, write_snapshot
    from kailab.pods import EventView

    verdict = Verdict(
        scenario="s",
        title=f"t{seq}",
        namespace=f"ns{seq}",
        checks=[Check(f"c{seq}", f"e{seq}", f"o{seq}", False).undecide(f"u{seq}")],
        timeline=[[0.0, {f"q{seq}": 1}]],
    ).to_record()
    verdict["lesson"] = {"prediction": f"p{seq}", "expected": f"x{seq}", "right": f"r{seq}",
                         "predictions": [{"key": f"k{seq}", "mark": "right", "given": f"g{seq}", "answer": f"a{seq}"}]}  # fmt: skip
    events = [EventView("Pod", f"pod{seq}", "Evicted", f"evicted {seq}\nsecond line", 1.0, f"ns{seq}")]
    row = dict.fromkeys(("name", "parent"), f"q{seq}") | _queue_numbers()
    files = {
        "report.md": render_report([verdict], [row], events, False),
        "events.txt": _table(["message"], [[e.message] for e in events]),
        "pods.yaml": yaml.safe_dump_all([{"metadata": {"name": f"pod{seq}"}}]),
        "verdicts.json": json.dumps([verdict]),
    }
    assert "second line" in files["report.md"] and "Pod/pod" in files["report.md"]
    with warnings.catch_warnings():  # a warning is printed on the terminal too (matplotlib's of a missing glyph)
        warnings.simplefilter("error")
        snap = write_snapshot(files, [verdict], tmp_path / "snap")
    for f in snap.iterdir():
        if f.suffix != ".png":
            assert clean(f.read_text()), (f.name, f.read_text())


@pytest.mark.parametrize("name, seq", list(ESCAPES.items()), ids=list(ESCAPES))
def test_a_librarys_own_warning_or_log_line_reaches_the_terminal_plain(monkeypatch, capsys, name, seq):
    """Text a library prints on stderr by itself (a warning quoting what it drew, a log record of the client's)."""
    import logging

    from kailab.termtext import plain_library_output

    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # both put back after the test
    monkeypatch.setattr(logging, "lastResort", logging.lastResort)
    plain_library_output()
    with warnings.catch_warnings():  # it keeps the showwarning installed above
        warnings.simplefilter("always")
        warnings.warn(f"Glyph missing from {seq}", UserWarning, stacklevel=1)
    # what logging does with a record no handler takes (pytest's own handlers take them all here)
    logging.lastResort.handle(logging.makeLogRecord({"msg": "a response: %s", "args": (seq,), "levelno": 30}))
    err = capsys.readouterr().err
    assert "Glyph missing from" in err and "a response:" in err and clean(err), repr(err)


def _queue_numbers() -> dict:
    return {"priority": 1, "quota": 1, "limit": 1, "weight": 1, "fair_share": 1, "allocated": 1, "pending": 0}


# -- sizes a machine cannot hold: refused up front, with the figure that decides it --------------------------------------


@pytest.mark.parametrize(
    "args, words",
    [
        (
            ["--nodes", "5000", "--gpus-per-node", "64", "--pods", "100000"],
            "100,000 pods × 0.7 MiB × 2 runs (one per scheduler) need about 139.2 GiB of memory",
        ),
        (["--nodes", "100", "--gpus-per-node", "64", "--pods", "6400", "--scheduler", "kai"], "would take about"),
    ],
    ids=["memory", "time"],
)
def test_a_bench_this_machine_cannot_hold_is_refused_before_anything_is_made(
    tmp_path, monkeypatch, capsys, args, words
):
    from kailab import sizing

    monkeypatch.setattr(sizing, "free_mib", lambda: 20_000.0)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    from kailab.lab import OwnLab

    monkeypatch.setattr(
        OwnLab, "kube", property(lambda self: pytest.fail("the lab was asked before the size was checked"))
    )
    r = run(monkeypatch, capsys, tmp_path / "lab", "bench", *args)
    no_traceback(r)
    assert r.code == 1 and words in r.said and "Nothing was made" in r.said, r.said


def test_a_fleet_this_machine_cannot_hold_is_refused_before_anything_starts(tmp_path, monkeypatch, capsys):
    from kailab import sizing

    monkeypatch.setattr(sizing, "free_mib", lambda: 2_000.0)
    fleet = tmp_path / "big.yaml"
    fleet.write_text(
        "pools:\n  - {name: big, nodes: 5000, gpusPerNode: 64, gpuProduct: NVIDIA-A100, gpuMemoryMiB: 81920}\n"
    )
    r = run(monkeypatch, capsys, tmp_path / "lab", "up", "--runtime", "local", "--fleet", str(fleet))
    no_traceback(r)
    assert r.code == 1 and "5,000 nodes × 0.5 MiB + the lab itself 1.0 GiB need about 3.4 GiB" in r.said, r.said
    assert not (tmp_path / "lab").exists()


def test_the_bench_clean_up_removes_what_it_can_when_parts_of_it_fail(monkeypatch, capsys):
    from kailab import bench
    from kailab.progress import Progress

    deleted = []

    class Flaky:
        """A client whose namespace clean-up fails, and whose every third node delete raises a KeyError."""

        def empty_namespace(self, name, timeout):
            raise KeyError("kind")

        def delete(self, api, kind, name, namespace=None):
            if kind == "Node" and name.endswith(("3", "6", "9")):
                raise KeyError(name)
            deleted.append(name)

    names = [f"kwok-bench-{i}" for i in range(10)]
    bench.clean_up(Flaky(), names, 32, Progress())
    err = capsys.readouterr().err
    assert set(deleted) == {bench.QUEUE, *(n for n in names if not n.endswith(("3", "6", "9")))}
    assert (
        "some of the bench's objects are left: its Job and pods in namespace kailab-bench (KeyError: 'kind'); " in err
    )
    assert "3 of its nodes kwok-bench-*" in err and "Traceback" not in err, err


def test_plain_keeps_what_shows_and_takes_out_whole_sequences():
    from kailab.termtext import one_line, plain

    shown = "ann — café 🚀 ﷽ 日本\n\tnext"
    assert plain(shown) == shown
    assert plain("a\x1b[1;31mb\x1b[0m") == "ab"
    assert plain("a\x1b]0;title\x07b") == "ab" and plain("a\x1b]52;c;Zm9v\x1b\\b") == "ab"
    assert plain("a\x1b]0;never terminated") == "a"  # a string control runs to its end: none of it shows
    assert plain("\u202eabc\u2066d\u2069") == "abcd" and plain("x\x9b2Jy") == "xy"
    assert one_line("a\r\nb\x1b[2J  c") == "a b c"


@pytest.mark.parametrize("kind", [*KINDS, "names-that-are-paths"])
def test_a_damaged_class_file_names_itself_and_the_command_that_clears_it(tmp_path, user, kind):
    from kailab.classroom.klass import Class

    home = lab_folder(tmp_path / "lab")
    klass = Class(FakeHost(home, home / "kai"))  # the local runtime keeps the class's state in its KAI folder
    (home / "kai").mkdir()
    if kind == "names-that-are-paths":  # a name goes into paths (rmtree of a partition's folder): never one of these
        klass.state_file.write_text(json.dumps({"learners": ["ann", "../../../etc"]}))
    else:
        make(kind, klass.state_file, user)
    with hang_guard(), pytest.raises(DamagedState) as err:
        klass.learners()
    assert err.value.message.startswith(f"The state file of this lab's partitions {klass.state_file} is damaged: ")
    assert "kailab down" in err.value.hint


def test_a_learners_down_removes_what_it_can_and_keeps_the_join_to_try_again(tmp_path, monkeypatch):
    from kailab.classroom.access import lesson_namespaces

    home = lab_folder(tmp_path / "lab")
    cred = tmp_path / "ann.kubeconfig"
    outfile.write_own(home / joined_mod.FILE, json.dumps({"learner": "ann", "kubeconfig": str(cred)}), root=home)
    emptied, deleted = [], []
    broken = lesson_namespaces("ann")[1]

    class Cluster:
        def __init__(self, path, context=None):
            self.core = SimpleNamespace(delete_collection_namespaced_config_map=lambda ns, label_selector: None)

        def get(self, api, kind, name):
            return {"metadata": {"name": name}}

        def empty_namespace(self, name):
            if name == broken:
                raise KeyError(name)  # the kind of failure a busy API server's client has given
            emptied.append(name)

        def list(self, api, kind, label_selector):
            return [{"metadata": {"name": f"ann-{kind.lower()}"}}]

        def delete(self, api, kind, name):
            deleted.append(name)

    monkeypatch.setattr("kailab.kube.Kube", Cluster)  # joined.py imports it where it uses it
    monkeypatch.setattr(joined_mod, "whoami", lambda kube, path: credentials.username("ann"))
    with pytest.raises(KailabError) as err:
        joined_mod.leave(joined_mod.current(home), home)
    assert f"these are left: {broken} (KeyError)" in err.value.message and "kailab down again" in err.value.hint
    assert len(emptied) == len(lesson_namespaces("ann")) - 1 and len(deleted) == 3
    assert joined_mod.current(home).learner == "ann"  # kept: kailab down tries again


@pytest.mark.parametrize("kind", ["fifo", "device", "huge", "folder"])
@pytest.mark.parametrize("where, field", [("cluster", "certificate-authority"), ("user", "client-certificate"),
                                          ("user", "client-key"), ("user", "tokenFile")])  # fmt: skip
def test_a_file_a_kubeconfig_names_is_read_by_the_same_rule(tmp_path, user, monkeypatch, capsys, where, field, kind):
    named = tmp_path / "named" / field
    make(kind, named, user)
    conf = class_credential()
    (conf["clusters"] if where == "cluster" else conf["users"])[0][where][field] = str(named)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(conf))
    for args in (["up", "--runtime", "existing", "--kubeconfig", str(path)], ["join", str(path)]):
        r = run(monkeypatch, capsys, tmp_path / "lab", *args)
        no_traceback(r)
        # join refuses a user who signs in with anything but a token before it reads anything
        words = "is not a class credential" if args[0] == "join" and where == "user" else f"names the {field} {named}: "
        assert r.code == 1 and words in r.said, r.said


def oidc_kubeconfig(issuer: str) -> dict:
    """A kubeconfig whose user signs in with an OIDC auth provider and an expired token (the client refreshes it)."""
    import base64

    def part(d: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")

    token = f"{part({'alg': 'none'})}.{part({'exp': 1, 'iss': issuer})}.sig"
    provider = {
        "client-id": "a",
        "client-secret": "b",
        "id-token": token,
        "refresh-token": "r",
        "idp-issuer-url": issuer,
    }
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {"auth-provider": {"name": "oidc", "config": provider}}}],
    }


@pytest.mark.parametrize("issuer", ["refuses", "never-answers"])
def test_a_kubeconfigs_auth_provider_that_cannot_refresh_is_one_message_within_the_bound(
    tmp_path, monkeypatch, capsys, issuer
):
    import socket

    from kailab import kubeconfig

    monkeypatch.setattr(kubeconfig, "EXEC_TIMEOUT", 1.0)
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)  # connections wait in its backlog: nothing ever answers them
        url = "https://127.0.0.1:1" if issuer == "refuses" else f"https://127.0.0.1:{listening.getsockname()[1]}"
        path = tmp_path / "oidc.kubeconfig"
        path.write_text(yaml.safe_dump(oidc_kubeconfig(url)))
        before = path.read_bytes()
        r = run(monkeypatch, capsys, tmp_path / "lab", "up", "--runtime", "existing", "--kubeconfig", str(path))
    no_traceback(r)
    assert r.code == 1 and r.err.count("✗ Error:") == 1 and f"The kubeconfig {path} " in r.said, r.said
    assert path.read_bytes() == before  # the client never writes a refreshed token back into it


GOLDEN = Path(__file__).parent.parent / "golden"


@pytest.mark.parametrize("lesson", sorted(p.name for p in GOLDEN.iterdir() if (p / "changes.jsonl").exists()))
def test_every_record_kailab_writes_is_one_class_status_reads(lesson):
    """The other side of the check: a lesson's record as kailab writes it (its golden run's verdict, timeline and
    graded predictions) is never taken for a bad one."""
    from kailab.classroom.records import read_record, record_object
    from kailab.lesson import scenario_file
    from kailab.predictions import graded
    from kailab.scenarios.loader import load_scenario
    from kailab.scenarios.replay import replay

    scenario = load_scenario(scenario_file(lesson))  # an exercise's, or a variation's (exercises/variations/)
    verdict = replay(scenario, GOLDEN / lesson)
    verdict.namespace = f"ann-{scenario.namespace}"
    marks = [g.to_dict() for g in graded(scenario.predictions, {}, verdict.answers)]
    obj = record_object("ann", verdict, "team-a gets 8", marks)
    meta = SimpleNamespace(**{k: obj["metadata"][k] for k in ("name", "namespace", "labels")})
    row = read_record(SimpleNamespace(metadata=meta, data=obj["data"]), "ann")
    assert row["outcome"] == verdict.outcome and row["timeline"] == verdict.timeline


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "-1", "ten"])
@pytest.mark.parametrize("command", ["status", "evidence"])
def test_a_number_of_seconds_that_is_no_number_is_refused_as_an_argument(tmp_path, monkeypatch, capsys, command, value):
    """--stuck-after takes a finite number of seconds: nan, inf and negatives are usage errors, before the lab is read."""
    r = run(monkeypatch, capsys, tmp_path / "lab", "class", command, "--stuck-after", value)
    no_traceback(r)
    assert r.code == 2, (r.code, r.out, r.err)
    assert "--stuck-after" in r.err
