"""Make docs/watch-fairshare.svg: `kailab watch` as it looks at the end of the fair-share lesson.

kailab up && python docs/screenshot.py      # runs `kailab demo fairshare`, then draws one watch frame
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rich.console import Console

from kailab.lab import Lab

OUT = Path(__file__).parent / "watch-fairshare.svg"


def main() -> None:
    subprocess.run([sys.executable, "-m", "kailab", "demo", "fairshare", "-q"], check=True)
    console = Console(record=True, width=120, force_terminal=True, color_system="truecolor")
    console.print(Lab.open().frame())
    console.save_svg(str(OUT), title="kailab watch — after the fair-share lesson")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
