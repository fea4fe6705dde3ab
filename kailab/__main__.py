"""``python -m kailab``: the command line (kailab/cli.py)."""

from kailab.cli import main

main()
