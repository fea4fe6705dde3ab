from kailab.lesson import SECTIONS, lesson_names, load_lesson


def test_every_lesson_has_every_section():
    assert lesson_names() == ["baseline", "borrow", "consolidation", "fairshare", "fractions", "gang", "hierarchy",
                              "placement", "priority", "protection", "quota", "reclaim"]
    for name in lesson_names():
        les = load_lesson(name)
        assert set(les.sections) == set(SECTIONS), name
        assert les.one_line.endswith(".")


def test_every_kai_message_a_lesson_quotes_is_in_its_recorded_run():
    """What a lesson says KAI reports ("…"-quoted in **What you should see.**) is in the recording of a real KAI run
    (tests/golden/NAME/changes.jsonl): events and the pods' own reasons, with ``…`` standing for any text."""
    import json
    import re
    from pathlib import Path

    golden = Path(__file__).parent.parent / "golden"
    quoted = 0
    for name in lesson_names():
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
