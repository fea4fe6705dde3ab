"""Refresh the golden files: copy recorded change streams in, replay each, write its verdict.json.

Record on a running lab (local runtime, real KAI):   kailab demo all --record /tmp/rec
(a lesson's variation, exercises/variations/NAME.yaml: kailab demo NAME --record /tmp/rec)
Then, from the repository:                          python tests/golden/update.py /tmp/rec
Without an argument it only rewrites each verdict.json from the streams already here —
do that when a check's meaning changes on purpose, and read the diff.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from kailab.lesson import scenario_file
from kailab.scenarios.engine import CHANGES_FILE
from kailab.scenarios.loader import load_scenario
from kailab.scenarios.replay import golden, replay

HERE = Path(__file__).parent


def main(source: Path | None) -> None:
    if source is not None:
        for d in sorted(p for p in source.iterdir() if (p / CHANGES_FILE).exists()):
            (HERE / d.name).mkdir(exist_ok=True)
            shutil.copyfile(d / CHANGES_FILE, HERE / d.name / CHANGES_FILE)
    for d in sorted(p for p in HERE.iterdir() if (p / CHANGES_FILE).exists()):
        verdict = replay(load_scenario(scenario_file(d.name)), d)
        (d / "verdict.json").write_text(json.dumps(golden(verdict), indent=1, ensure_ascii=False) + "\n")
        print(f"{d.name}: {'PASS' if verdict.passed else 'FAIL'}, {len(verdict.checks)} checks")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
