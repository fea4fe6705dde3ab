"""A real headless browser for the pages' tests: Debian's chromium (``apt-get install chromium``; .ci/run installs it)
driven by Playwright, which is pointed at it — no browser is ever downloaded. Where chromium is missing the tests
that need it skip with the reason; under CI=true that is a failure instead."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
FLAGS = [  # what works in this sandbox; a fresh profile (--user-data-dir) is Playwright's persistent context's folder
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DOCS = Path(__file__).resolve().parents[1] / "docs"


def need_chromium() -> None:
    if Path(CHROMIUM).exists():
        return
    why = f"no browser at {CHROMIUM}: apt-get install -y chromium chromium-driver"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must test the pages in a real browser: {why}")
    pytest.skip(why)


@contextmanager
def chromium(width: int = 1400, height: int = 1000) -> Iterator:
    """A page of a fresh headless chromium (Playwright's sync API); closed, profile removed, at the end."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="kailab-chromium-")
    try:
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=FLAGS,
                viewport={"width": width, "height": height},
            )
            try:
                yield ctx.pages[0] if ctx.pages else ctx.new_page()
            finally:
                ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def live(page) -> None:
    """Wait until the page has had its first update from the server (its events stream is open)."""
    page.wait_for_selector("body[data-updated]", state="attached", timeout=30_000)


def screenshot(page, name: str) -> Path:
    """A screenshot for the docs and the README (docs/NAME.png)."""
    path = DOCS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
