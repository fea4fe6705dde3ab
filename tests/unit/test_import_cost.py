"""What a command imports: a joined learner's ``kailab status`` and ``join`` load the Kubernetes client and their
slice, not the instructor's class (its grading replay engine, the scenario engine, the page); ``kailab --help``
loads no Kubernetes client at all. Measured with ``python -X importtime`` (README, Performance); checked here as
the set of modules a fresh interpreter ends up with, which a busy host does not change."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# Never needed by a learner's status or join: the instructor's side, the lesson engine, the pages.
NOT_A_LEARNERS = (
    "kailab.classroom.klass",
    "kailab.classroom.grading",
    "kailab.classroom.records",
    "kailab.scenarios.engine",
    "kailab.scenarios.model",
    "kailab.explain",
    "kailab.tasks",
    "kailab.fleet",
    "jinja2",
    "starlette",
    "matplotlib",
)


def _modules(script: str, tmp_path) -> set[str]:
    code = textwrap.dedent(script) + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    env = {"KAILAB_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_joined_learners_status_imports_their_slice_not_the_class(tmp_path):
    """Their folder's join opened as every command opens it (the first line says whose slice), then ``status`` to
    the end on a cluster that answers as theirs does (a fake client: the imports are the point)."""
    loaded = _modules(
        f"""
        import json, os
        from pathlib import Path
        from types import SimpleNamespace
        home = Path({str(tmp_path / "home")!r}); home.mkdir(mode=0o700)
        (home / "class-credential.json").write_text(json.dumps({{"learner": "ann", "kubeconfig": "/nowhere/ann"}}))
        from kailab.cli import app  # the command line as `kailab status` loads it
        from kailab.classroom.joined import slice_line
        from kailab.lab import Lab
        lab = Lab.open()
        assert slice_line(lab.learner).startswith("Learner ann")
        empty = SimpleNamespace(items=[], data=b'{{"items": []}}')
        core = SimpleNamespace(
            list_node=lambda **kw: empty, list_namespace=lambda **kw: empty, list_namespaced_pod=lambda *a, **kw: empty
        )
        kube = SimpleNamespace(
            api=SimpleNamespace(configuration=SimpleNamespace(host="https://192.0.2.7:6443")),
            core=core, pods=lambda ns: [], list=lambda *a, **kw: [], get=lambda *a, **kw: None,
        )
        lab.__dict__["kube"] = kube
        status = lab.status(with_queues=True)
        assert status["runtime"] == "class", status
        """,
        tmp_path,
    )
    assert "kubernetes" in loaded and "kailab.status" in loaded  # what status does need
    assert not loaded & set(NOT_A_LEARNERS), sorted(loaded & set(NOT_A_LEARNERS))


def test_join_reads_the_credential_without_the_class(tmp_path):
    loaded = _modules(
        """
        from kailab.cli import app
        from kailab.classroom import joined
        from kailab.kube import Kube  # what join asks the cluster with
        assert joined.joined_object("ann", "laptop")["metadata"]["namespace"]
        """,
        tmp_path,
    )
    assert not loaded & set(NOT_A_LEARNERS), sorted(loaded & set(NOT_A_LEARNERS))


def test_help_loads_no_kubernetes_client(tmp_path):
    loaded = _modules("from kailab.cli import app, main", tmp_path)
    assert not {m for m in loaded if m == "kubernetes" or m.startswith("kubernetes.")}
    assert not loaded & set(NOT_A_LEARNERS), sorted(loaded & set(NOT_A_LEARNERS))


def test_a_learners_lesson_namespaces_read_without_the_loader_are_the_loaders():
    """:func:`kailab.classroom.access.lesson_namespaces` reads each exercise's ``namespace``/``name`` alone; the
    scenario loader and the partition's renaming give the same names."""
    from kailab.classroom import access
    from kailab.lesson import lesson_names
    from kailab.partitions import for_partition
    from kailab.paths import EXERCISES
    from kailab.scenarios.loader import load_scenario
    from kailab.scenarios.model import Scenario

    challenges = Scenario(name="challenge", title="", path="", namespace=access.CHALLENGE_NAMESPACE)
    scenarios = [*(load_scenario(EXERCISES / f"{n}.yaml") for n in lesson_names()), challenges]
    assert access.lesson_namespaces("ann") == sorted({for_partition(s, "ann").namespace for s in scenarios})
    assert access.challenge_namespace("ann") == for_partition(challenges, "ann").namespace
    assert len(access.lesson_namespaces("ann")) == len(lesson_names()) + 1
