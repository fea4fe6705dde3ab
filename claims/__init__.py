"""Not code: marks claims/ as the package kailab.data.claims (pyproject.toml), so the wheel ships these files and
kailab reads them through importlib.resources, installed or editable (see kailab/paths.py)."""
