from kailab.lesson import SECTIONS, lesson_names, load_lesson


def test_every_lesson_has_every_section():
    assert lesson_names() == ["baseline", "borrow", "consolidation", "fairshare", "fractions", "gang", "hierarchy",
                              "placement", "priority", "protection", "quota", "reclaim"]
    for name in lesson_names():
        les = load_lesson(name)
        assert set(les.sections) == set(SECTIONS), name
        assert les.one_line.endswith(".")
