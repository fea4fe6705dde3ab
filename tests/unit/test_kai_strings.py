"""One place for what KAI says (issue 40, item 5): kailab/kai_strings.yaml.

- Every row is in the file of the pinned KAI module that defines it (and in the KAI doc that documents it); when one is
  not, the failure names every kailab file and line that uses it — the sentences a KAI upgrade breaks.
- kailab's code reads KAI's words from the table (``kai_strings.get``): no message, reason, metric or KAI key is
  written in place, and ``explain`` quotes no field of KAI's in its own strings.
- Every KAI string the lessons and runbooks quote (in backticks, in quotation marks, in an output block) is a row:
  a KAI label or annotation key, a metric name, a field of KAI's API or configuration, a message KAI writes.

The module comes from Go's module cache (the fleet's build fills it; ``go mod download`` here fills it otherwise, from
the GOPROXY .ci/run sets). Without Go or the module the tests on KAI's source skip — except under CI=true, where they
fail.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import tempfile
from functools import cache
from pathlib import Path

import pytest

from kailab import explain_words, kai_strings, labels
from kailab.versions import KAI_MODULE, KAI_VERSION

REPO = Path(__file__).parent.parent.parent
ROWS = list(kai_strings.rows().values())
IN_CI = os.environ.get("CI") == "true"
# What quotes KAI: the lessons, runbooks and docs, in prose; kailab's code, by a row's key
PROSE = sorted(
    [*REPO.glob("exercises/*.md"), *REPO.glob("runbooks/*.md"), *REPO.glob("docs/*.md"), REPO / "README.md"]
    + [*REPO.glob("exercises/**/*.yaml"), *REPO.glob("runbooks/**/*.yaml"), *REPO.glob("claims/*.yaml")]  # checks
) + [REPO / "tests/unit/test_kai_keys.py"]  # KAI's documented keys, as its docs write them
LESSONS = sorted([*REPO.glob("exercises/*.md"), *REPO.glob("runbooks/*.md")])
# exercises/README.md is the scenario format: its words (nodePool, minMember …) are kailab's, some named as KAI's are
LESSON_TEXTS = [p for p in LESSONS if p.name != "README.md" or p.parent.name != "exercises"]
# Kubernetes' own field names, which KAI's types carry too (an affinity's topologyKey, a pod's nodeSelector)
KUBERNETES_FIELDS = {"nodeSelector", "topologyKey", "tolerations", "affinity"}
CODE = sorted(p for p in (REPO / "kailab").rglob("*.py") if p.name != "kai_strings.py")
# Kinds whose text kailab's code must never write in place (fields are also the keys of the objects kailab builds)
SAID_BY_KAI = {"message", "condition reason", "event reason", "condition", "metric", "namespace"}
KEYED = re.compile(r"(?<![\w.-])kai\.scheduler/(?!v\d)[a-z][\w.-]*")
METRIC = re.compile(r"\bkai_[a-z]+(?:_[a-z]+)+\b(?!\.)")
CAMEL = re.compile(r"[a-z]+[A-Z][A-Za-z]*|[A-Z][a-z]+[A-Z][A-Za-z]*")
VERB = re.compile(r"%[-+# 0]*(?:\d+)?(?:\.\d+)?[a-zA-Z]")


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


def _quotes(text: str) -> list[str]:
    """What a lesson quotes: spans in backticks, text in quotation marks, lines of output blocks (spaces folded)."""
    fenced = re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
    prose = re.sub(r"```[^\n]*\n.*?```", "", text, flags=re.S)
    found = re.findall(r"`([^`]+)`", prose) + re.findall(r"[\"“]([^\"“”\n]{8,})[\"”]", prose)
    found += [line for block in fenced for line in block.splitlines()]
    return [" ".join(q.split()) for q in found if q.strip()]


@cache
def _said(row: kai_strings.KaiString) -> re.Pattern:
    """A row's text as prose says it: the word alone; a message as KAI fills it in."""
    if not VERB.search(row.text):
        return re.compile(rf"(?<![\w-]){re.escape(row.text)}(?![\w-])")
    return re.compile(kai_strings.pattern(row.key))


def _quoted_by(row: kai_strings.KaiString, line: str) -> bool:
    """Whether a line of prose says this row: its text (a message: as KAI fills it in, or a long part of it)."""
    return _said(row).search(line) is not None or any(f in line for f in _parts(row))


@cache
def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


@cache
def _folded(path: Path) -> str:
    return " ".join(line.strip() for line in _lines(path))


def _parts(row: kai_strings.KaiString) -> list[str]:
    """The parts of a message long enough to be KAI's alone (not "does not exist")."""
    return [f.strip() for f in kai_strings.fragments(row.text) if len(f.strip()) >= 16]


@cache
def uses(row: kai_strings.KaiString) -> list[str]:
    """Every place kailab says this row: lines of the lessons, runbooks and docs; lines of code that read its key."""
    found = []
    for path in PROSE + CODE:
        lines = _lines(path)
        if (row.key not in _folded(path)) if path in CODE else not _quoted_by(row, _folded(path)):
            continue
        for n, line in enumerate(lines, 1):
            if path in CODE:
                said = f'"{row.key}"' in line or f"'{row.key}'" in line
            else:  # a line, or a message wrapped onto the next one
                wrapped = n < len(lines) and not _quoted_by(row, lines[n])
                said = _quoted_by(row, line) or (wrapped and _quoted_by(row, f"{line} {lines[n].strip()}"))
            if said:
                found.append(f"{path.relative_to(REPO)}:{n}")
    return found


def _at(row: kai_strings.KaiString) -> str:
    """The uses of a row, one a line (for a failure's message: computed only when it fails)."""
    return "".join(f"\n  {u}" for u in uses(row))


def row_id(row: kai_strings.KaiString) -> str:
    return row.key


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_each_string_is_in_the_kai_file_that_defines_it_and_the_doc(kai, row):
    literal = row.source or row.text
    defined = kai / row.defined
    assert defined.is_file(), f"KAI {KAI_VERSION} has no {row.defined} (home of {literal!r}); used at:{_at(row)}"
    assert literal in defined.read_text(), f"{row.defined} no longer says {literal!r}; this breaks:{_at(row)}"
    if row.docs:
        doc = (kai / row.docs).read_text()
        assert literal in doc or row.text in doc, f"KAI's {row.docs} no longer documents {row.text!r}"


def test_a_missing_string_names_each_file_and_line_that_uses_it():
    stale = kai_strings.rows()["reason.over-limit"]
    found = uses(stale)
    assert any(u.startswith("exercises/hierarchy.md:") for u in found), found
    message = kai_strings.rows()["message.queue-missing"]  # a message with a verb: as KAI fills it in
    assert any(u.startswith("kailab/explain_words.py:") for u in uses(message))


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_each_row_is_used(row):
    """A row nobody quotes is not kailab's word; remove it (or quote it)."""
    assert uses(row), row.key


def test_the_table_is_one_row_per_key_and_per_string_with_a_kai_path():
    texts = [r.text for r in ROWS]
    assert len(texts) == len(set(texts)) and len(ROWS) >= 60
    for r in ROWS:
        assert re.match(r"^(label|annotation|namespace|api|field|reason|event|condition|message|metric)\.", r.key), r
        assert re.match(r"^(pkg|cmd)/[\w/.-]+\.go$", r.defined), r


def test_a_kai_message_is_a_pattern_of_what_kai_fills_in():
    missing = re.compile(kai_strings.pattern("message.queue-missing", "queue"))
    assert missing.search("Queue 'team-x' does not exist")["queue"] == "team-x"
    assert explain_words.over_quota_detail(
        "Non-preemptible workload is over quota. Workload requested 2 GPUs, but team-a quota is 1 GPUs, while 1 GPUs "
        "are already allocated for non-preemptible pods. Use a preemptible workload to go over quota."
    ) == ("gpus", "team-a")
    said = "Pod ns-a/trainer-0 was preempted by higher priority workload ns-a/urgent-pg"
    assert explain_words.preemptor(said) == "ns-a/urgent-pg"
    assert explain_words.preemptor("Pod ns-a/x was preempted by workload ns-b/y.") is None
    with pytest.raises(KeyError, match="kai_strings.yaml has no row 'message.nothing'"):
        kai_strings.get("message.nothing")


def test_explains_patterns_match_each_kai_message_it_reads_as_kai_fills_it_in():
    source = (REPO / "kailab" / "explain_words.py").read_text()
    read = [r for r in ROWS if r.kind == "message" and (f'"{r.key}"' in source or f"'{r.key}'" in source)]
    patterns = [p for p, _, _ in explain_words.KNOWN_REASONS + explain_words.KNOWN_EVICTIONS]
    patterns += [explain_words.OVER_QUOTA, explain_words.PREEMPTED.pattern, explain_words.SHARING_OFF]
    patterns += [d.pattern for d in explain_words.OVER_QUOTA_DETAILS.values()]
    assert len(read) >= 20
    for r in read:
        said = f"KAI: {VERB.sub('team-a', r.text)}."
        assert any(re.search(p, said) for p in patterns), f"no pattern of explain_words matches {r.key}: {said!r}"


def _literals(path: Path) -> list[tuple[int, str]]:
    """A module's string constants, docstrings and comments aside."""
    tree = ast.parse(path.read_text())
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and ast.get_docstring(node, clean=False) is not None
    }
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def _writes(r: kai_strings.KaiString, value: str, in_sentences: bool) -> bool:
    """Whether a string of kailab's code writes this row in place: a message (or a long part of one) anywhere; a
    key, reason or metric as the whole string; with ``in_sentences`` (explain's), a word of KAI's in a sentence."""
    if in_sentences:
        return " " in value and _within(r.text, value)
    if r.kind == "message":
        return any(_within(p, value) for p in _parts(r) or [r.text])
    return value == r.text


def test_kailabs_code_reads_kais_words_from_the_table():
    said = [r for r in ROWS if r.kind in SAID_BY_KAI or (r.kind in ("label", "annotation") and "/" in r.text)]
    quoted = [r for r in ROWS if r.kind in ("field", "label", "annotation", "metric")]  # in explain's sentences
    written = []
    for path in CODE:
        quoting = path.name in ("explain.py", "explain_words.py", "explain_operated.py")
        for line, value in _literals(path):
            for r, in_sentences in [(r, False) for r in said] + [(r, True) for r in (quoted if quoting else [])]:
                if _writes(r, value, in_sentences):
                    written.append(
                        f"{path.relative_to(REPO)}:{line} writes {r.text!r}: read kai_strings.get({r.key!r})"
                    )
    assert written == []


def _within(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(text)}(?![\w-])", value) is not None


def test_every_kai_key_of_labels_py_is_a_row():
    texts = {r.text for r in ROWS}
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

    documented = {r.text for r in ROWS if r.docs}
    assert sorted(set(DOCUMENTED) - documented) == []


def _covered(quote: str) -> bool:
    """Whether a row says this quote: a row's text is in it, or it is (a part of) a row's message."""
    for r in ROWS:
        if _within(r.text, quote) or _said(r).search(quote):
            return True
        if any(len(f.strip()) >= 8 and (f.strip() in quote or quote in f) for f in kai_strings.fragments(r.text)):
            return True
    return False


def test_every_kai_key_and_metric_the_lessons_and_runbooks_quote_is_a_row():
    texts = {r.text for r in ROWS}
    unlisted = sorted(
        {
            f"{path.relative_to(REPO)}: {key}"
            for path in LESSONS
            for quote in _quotes(path.read_text())
            for key in KEYED.findall(quote) + METRIC.findall(quote)
            if key.rstrip(".") not in texts
        }
    )
    assert unlisted == []


@cache
def _kai_words(kai: Path) -> tuple[frozenset[str], frozenset[str]]:
    """KAI's own field names (the json tags of its Go types) and the literal parts of its messages (3 words or more)."""
    tags: set[str] = set()
    parts: set[str] = set()
    for f in (kai / "pkg").rglob("*.go"):
        if f.name.endswith("_test.go") or "mock" in f.name:
            continue
        text = f.read_text(errors="replace")
        tags.update(t.split(",")[0] for t in re.findall(r'json:"([^"]*)"', text))
        for literal in re.findall(r'"((?:[^"\\\n]|\\.)*)"', text):
            parts.update(p.strip() for p in VERB.split(literal) if len(p.strip()) >= 15 and p.strip().count(" ") >= 2)
    return frozenset(tags), frozenset(parts)


def test_every_kai_field_and_message_the_lessons_and_runbooks_quote_is_a_row(kai):
    tags, messages = _kai_words(kai)
    texts = {r.text for r in ROWS}
    unlisted = set()
    for path in LESSON_TEXTS:
        for quote in _quotes(path.read_text()):
            if CAMEL.fullmatch(quote) and quote in tags and quote not in texts | KUBERNETES_FIELDS:
                unlisted.add(f"{path.relative_to(REPO)}: field {quote}")
            elif len(quote) >= 15 and quote.count(" ") >= 2 and not _covered(quote):
                if any(m in quote or quote in m for m in messages):
                    unlisted.add(f"{path.relative_to(REPO)}: message {quote!r}")
    assert sorted(unlisted) == []


def test_the_lesson_checks_would_catch_an_unlisted_quote(kai):
    tags, messages = _kai_words(kai)
    text = "Set `kai.scheduler/made-up` and read `kai_made_up_total`; KAI says `Unable to schedule podgroup`.\n"
    quotes = _quotes(text)
    assert [k for q in quotes for k in KEYED.findall(q) + METRIC.findall(q)] == [
        "kai.scheduler/made-up",
        "kai_made_up_total",
    ]
    assert "Unable to schedule podgroup" in quotes and _covered("Unable to schedule podgroup")
    assert "kValue" in tags and any("required for gang scheduling" in m for m in messages)
    assert not _covered("an unrelated sentence of our own")
