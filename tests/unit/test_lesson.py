import re
from pathlib import Path

from kailab.lesson import CLOSING, EXERCISE_NAMES, SECTIONS, load_lesson
from kailab.paths import EXERCISES

REPO = Path(__file__).parent.parent.parent


def test_every_lesson_has_every_section():
    for name in EXERCISE_NAMES:
        les = load_lesson(name)
        assert set(les.sections) - {CLOSING} == set(SECTIONS), name  # the closing section where it applies
        assert les.one_line.endswith(".")


def test_the_exercise_list_is_the_exercises_folder():
    """One list: every scenario and lesson file in exercises/ is in EXERCISE_NAMES, and each name has both."""
    assert len(set(EXERCISE_NAMES)) == len(EXERCISE_NAMES)
    assert {p.stem for p in EXERCISES.glob("*.yaml")} == set(EXERCISE_NAMES)
    assert {p.stem for p in EXERCISES.glob("*.md")} - {"README"} == set(EXERCISE_NAMES)


def test_the_readmes_list_the_exercises_in_teaching_order():
    demo_row = next(line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("| `kailab demo"))
    listed = demo_row.partition("run a built-in exercise:")[2].partition(";")[0]
    assert re.findall(r"`([a-z-]+)`", listed) == list(EXERCISE_NAMES)
    table = re.findall(r"^\| \[([a-z-]+)\]\(\1\.md\) \|", (EXERCISES / "README.md").read_text(), re.MULTILINE)
    assert table == list(EXERCISE_NAMES)


def test_every_kai_message_a_lesson_quotes_is_in_its_recorded_run():
    """What a lesson says KAI reports ("…"-quoted in **What you should see.**) is in the recording of a real KAI run
    (tests/golden/NAME/changes.jsonl): events and the pods' own reasons, with ``…`` standing for any text."""
    import json
    import re
    from pathlib import Path

    golden = Path(__file__).parent.parent / "golden"
    quoted = 0
    for name in EXERCISE_NAMES:
        reported = []
        for line in (golden / name / "changes.jsonl").read_text().splitlines():
            change = json.loads(line)
            reported += [change.get("event", {}).get("message", ""), change.get("pod", {}).get("waiting", "")]
        said = " ".join(reported)
        for quote in re.findall(r'"([^"]+)"', load_lesson(name).sections["What you should see"]):
            pattern = ".*".join(re.escape(piece.strip()) for piece in quote.split("…"))
            assert re.search(pattern, said), f"{name}: KAI never said “{quote}” in the recorded run"
            quoted += 1
    assert quoted >= 7  # the lessons quote KAI seven times today: the pattern must find them
