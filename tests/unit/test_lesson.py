import re
from pathlib import Path

from kailab.lesson import EXERCISE_NAMES, SECTIONS, load_lesson
from kailab.paths import EXERCISES

REPO = Path(__file__).parent.parent.parent


def test_every_lesson_has_every_section():
    for name in EXERCISE_NAMES:
        les = load_lesson(name)
        assert set(les.sections) == set(SECTIONS), name
        assert les.one_line.endswith(".")


def test_the_exercise_list_is_the_exercises_folder():
    """One list: every scenario and lesson file in exercises/ is in EXERCISE_NAMES, and each name has both."""
    assert len(set(EXERCISE_NAMES)) == len(EXERCISE_NAMES)
    assert {p.stem for p in EXERCISES.glob("*.yaml")} == set(EXERCISE_NAMES)
    assert {p.stem for p in EXERCISES.glob("*.md")} - {"README"} == set(EXERCISE_NAMES)


def test_the_readmes_list_the_exercises_in_teaching_order():
    demo_row = next(line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("| `kailab demo"))
    listed = demo_row.partition("run a built-in exercise:")[2].partition(";")[0]
    assert re.findall(r"`([a-z]+)`", listed) == list(EXERCISE_NAMES)
    table = re.findall(r"^\| \[([a-z]+)\]\(\1\.md\) \|", (EXERCISES / "README.md").read_text(), re.MULTILINE)
    assert table == list(EXERCISE_NAMES)
