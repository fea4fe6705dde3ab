"""One place for what KAI says (issue 40, item 5): every row of kailab/kai_strings.yaml is found in the file of the
pinned KAI module that defines it (and in the KAI doc that documents it), and in every kailab file that uses it; the
KAI keys of kailab/labels.py, the documented workload keys and the KAI words ``kailab explain`` reads are all rows.

The module comes from Go's module cache (the fleet's build fills it; ``go mod download`` here fills it otherwise, from
the GOPROXY .ci/run sets). Without Go or the module this skips — except under CI=true, where it fails.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from functools import cache
from pathlib import Path

import pytest
import yaml

from kailab import explain_words, labels
from kailab.versions import KAI_MODULE, KAI_VERSION

REPO = Path(__file__).parent.parent.parent
TABLE = REPO / "kailab" / "kai_strings.yaml"
ROWS = yaml.safe_load(TABLE.read_text())["strings"]
IN_CI = os.environ.get("CI") == "true"
# explain's words that Kubernetes writes (its filters, which KAI runs inside itself): not KAI's, so not rows here
KUBERNETES_WORDS = ("affinity rules", "PersistentVolumeClaims", "node affinity/selector")


@cache
def kai_module() -> Path | None:
    """The pinned KAI module's folder: Go's module cache, filled if need be as kailab's build fills it (a module of
    ours whose go.sum pins KAI's hashes: the checksum database does not know KAI); None when Go cannot."""
    from kailab.build import download, go_env, pinned_module_dir
    from kailab.versions import build

    if shutil.which("go") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            info = download(build("kai"), pinned_module_dir(build("kai"), Path(tmp)), go_env())
        except Exception:  # noqa: BLE001 (no proxy, no mirror: said by the fixture)
            return None
    folder = Path(info["Dir"])
    return folder if folder.is_dir() else None


@pytest.fixture(scope="module")
def kai() -> Path:
    folder = kai_module()
    if folder is None:
        if IN_CI:
            pytest.fail(f"CI must check kailab's KAI strings against {KAI_MODULE}@{KAI_VERSION}, which Go cannot fetch")
        pytest.skip(f"{KAI_MODULE}@{KAI_VERSION} is not in Go's module cache and cannot be fetched here")
    return folder


def row_id(row: dict) -> str:
    return row["text"][:40]


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_each_string_is_in_the_kai_file_that_defines_it_and_the_doc(kai, row):
    literal = row.get("source", row["text"])
    defined = kai / row["defined"]
    breaks = ", ".join(row["used"])
    assert defined.is_file(), f"KAI {KAI_VERSION} has no {row['defined']} (the table's home for {literal!r}): {breaks}"
    assert literal in defined.read_text(), f"{row['defined']} no longer says {literal!r}; this breaks: {breaks}"
    if "docs" in row:
        doc = (kai / row["docs"]).read_text()
        assert literal in doc or row["text"] in doc, f"KAI's {row['docs']} no longer documents {row['text']!r}"


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_each_string_is_where_the_table_says_kailab_uses_it(row):
    assert row["used"], row
    for path in row["used"]:
        assert row["text"] in (REPO / path).read_text(), f"{path} no longer uses {row['text']!r}: update the table"


def test_the_table_is_one_row_per_string_with_a_kai_path():
    texts = [r["text"] for r in ROWS]
    assert len(texts) == len(set(texts))
    assert len(ROWS) >= 60
    for r in ROWS:
        assert set(r) <= {"text", "kind", "defined", "source", "docs", "used"}, r
        assert re.match(r"^(pkg|cmd)/[\w/.-]+\.go$", r["defined"]), r


def test_every_kai_key_of_labels_py_is_a_row():
    texts = {r["text"] for r in ROWS}
    kai_keys = [
        labels.QUEUE_LABEL,
        labels.PREEMPTIBILITY_LABEL,
        labels.PRIORITY_CLASS_LABEL,
        labels.MIN_MEMBER_ANNOTATION,
        labels.POD_GROUP_ANNOTATION,
        labels.SUBGROUP_LABEL,
        labels.GPU_FRACTION_ANNOTATION,
        labels.GPU_MEMORY_ANNOTATION,
        labels.SKIP_PODGROUPER_ANNOTATION,
        labels.PREEMPTION_DELAY_ANNOTATION,
        labels.STALENESS_ANNOTATION,
        labels.GPU_GROUP_LABEL,
        labels.RESERVE_ANNOTATION,
        labels.RESERVATION_NAMESPACE,
        labels.NODEPOOL_LABEL,
        labels.TOPOLOGY_ANNOTATION,
        labels.TOPOLOGY_REQUIRED_ANNOTATION,
        labels.TOPOLOGY_PREFERRED_ANNOTATION,
    ]
    assert [k for k in kai_keys if k not in texts] == []


def test_every_documented_workload_key_is_a_row_with_its_doc():
    from test_kai_keys import DOCUMENTED

    documented = {r["text"] for r in ROWS if "docs" in r}
    assert sorted(set(DOCUMENTED) - documented) == []


def test_every_kai_word_explain_reads_is_a_row():
    messages = [r["text"] for r in ROWS if r["kind"] in ("message", "condition reason", "event reason")]
    patterns = [p for p, _, _ in explain_words.KNOWN_REASONS + explain_words.KNOWN_EVICTIONS] + [
        explain_words.STALE,
        explain_words.RESERVATION_FAILED,
        explain_words.SHARING_OFF,
        explain_words.QUEUE_MISSING.pattern,
        explain_words.OVER_QUOTA_DETAIL.pattern,
        explain_words.PREEMPTED_BY.pattern,
    ]
    unlisted = [
        p
        for p in patterns
        if not any(k in p for k in KUBERNETES_WORDS) and not any(m in p or re.search(p, m) for m in messages)
    ]
    assert unlisted == []
