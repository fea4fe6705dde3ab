"""The pages as a Starlette app: read-only, every text escaped, everything the browser loads served from the package.

GET only; every page and update is made by Jinja2 with autoescape on, so a name, a prediction or a pod name is text,
never markup; no CDN, no build step.

- ``/``: the whole page; ``/events``: its regions again as server-sent events each time the hub's view is new
  (only the regions that changed for that browser); ``?selected=`` names the learner (class) or lesson record (lab)
  opened on a click;
- ``/explain?pod=NAMESPACE/NAME`` (the lab's page): ``kailab explain``'s answer and its runbook, for a pod the page
  shows; ``/timeline.png?record=NAMESPACE/NAME``: a finished lesson's GPU timeline, drawn by ``kailab evidence``'s
  renderer; ``/runbook/NAME``: a runbook's text; ``/static/…``: the stylesheet and script.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import anyio
from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from kailab.classroom.records import stuck_line, unreadable_line
from kailab.paths import RUNBOOKS
from kailab.web.hub import Hub
from kailab.web.models import EMPTY

STATIC = Path(__file__).parent / "static"
TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
KEEP_ALIVE = 15.0  # seconds between comments on a quiet stream (a proxy or browser may close a silent one)
# The browser runs only the package's own script and style: even a name that got past escaping could not run.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self'; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
REGIONS = {  # each page's regions: element id → template
    "lab": {"banner": "banner.j2", "lessons": "lab_lessons.j2", "queues": "lab_queues.j2", "gpus": "lab_gpus.j2"},
    "class": {
        "banner": "banner.j2",
        "grid": "class_grid.j2",
        "summary": "class_summary.j2",
        "stuck": "class_stuck.j2",
        "learner": "class_learner.j2",
    },
}


def environment() -> Environment:
    """Jinja2 for the pages: autoescape on for every template (their names end in .j2, not .html)."""
    env = Environment(loader=PackageLoader("kailab.web", "templates"), autoescape=True, undefined=StrictUndefined)
    env.filters["num"] = lambda x: "–" if x is None else f"{x:g}" if isinstance(x, float) else str(x)
    return env


class EventStream(StreamingResponse):
    """Server-sent events that end as soon as the browser leaves (not at the next message): its task is cancelled,
    and what it held is let go."""

    async def __call__(self, scope, receive, send) -> None:
        async with anyio.create_task_group() as tg:

            async def until_done(work: Callable) -> None:
                try:
                    await work()
                except OSError:  # the browser left while a message was being sent
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(until_done, partial(self.stream_response, send))
            await until_done(partial(self.listen_for_disconnect, receive))


def make_app(hub: Hub, page: Page, local_only: bool = True) -> Starlette:
    """The app serving ``page`` from ``hub``'s view; ``local_only``: answer only requests addressed to this machine's
    loopback names (a page bound to 127.0.0.1 is not readable through another name pointed at it)."""
    env = environment()
    browsers: set[asyncio.Queue] = set()

    def regions(view: dict, selected: str) -> dict[str, str]:
        context = page.context(view, selected)
        return {rid: env.get_template(name).render(**context) for rid, name in REGIONS[page.kind].items()}

    @asynccontextmanager
    async def lifespan(app) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()

        def wake_all() -> None:
            for q in list(browsers):
                if q.empty():
                    q.put_nowait(None)

        hub.listen(lambda: loop.call_soon_threadsafe(wake_all))
        yield

    async def index(request: Request) -> Response:
        selected = request.query_params.get("selected", "")
        html = env.get_template(f"{page.kind}.j2").render(
            regions=regions(hub.view, selected), title=page.title(hub.view), kind=page.kind
        )
        return HTMLResponse(html, headers=HEADERS)

    async def events(request: Request) -> Response:
        selected = request.query_params.get("selected", "")

        async def stream() -> AsyncIterator[str]:
            woken: asyncio.Queue = asyncio.Queue(maxsize=1)
            browsers.add(woken)
            hub.browsers += 1
            hub.wake()
            sent: dict[str, str] = {}
            try:
                yield "retry: 2000\n\n"  # a browser that lost the server asks again every 2 s
                while True:
                    fresh = regions(hub.view, selected)
                    changed = {k: v for k, v in fresh.items() if sent.get(k) != v}
                    if changed:
                        sent.update(changed)
                        yield f"event: regions\ndata: {json.dumps(changed)}\n\n"
                    try:
                        await asyncio.wait_for(woken.get(), KEEP_ALIVE)
                    except TimeoutError:
                        yield ": still here\n\n"
            finally:
                browsers.discard(woken)
                hub.browsers -= 1

        return EventStream(stream(), media_type="text/event-stream", headers={**HEADERS, "X-Accel-Buffering": "no"})

    async def explain(request: Request) -> Response:
        pod = request.query_params.get("pod", "")
        found = await run_in_threadpool(page.explain, pod)
        if found is None:
            return HTMLResponse(
                env.get_template("explain.j2").render(pod=pod, found=[], missing=True), 404, headers=HEADERS
            )
        runbooks = {e.runbook: runbook_text(e.runbook) for e in found if e.runbook}
        return HTMLResponse(
            env.get_template("explain.j2").render(pod=pod, found=found, missing=False, runbooks=runbooks),
            headers=HEADERS,
        )

    async def timeline(request: Request) -> Response:
        row = page.record(hub.view, request.query_params.get("record", ""))
        if row is None or not row.get("timeline"):
            return PlainTextResponse("No such finished lesson on this page.", 404, headers=HEADERS)
        png = await run_in_threadpool(timeline_png, row)
        # A finished lesson's picture never changes (its URL names when it finished): kept, not drawn again.
        return Response(png, media_type="image/png", headers={**HEADERS, "Cache-Control": "private, max-age=86400"})

    async def runbook(request: Request) -> Response:
        text = runbook_text(f"runbooks/{request.path_params['name']}")
        if text is None:
            return PlainTextResponse("No such runbook.", 404, headers=HEADERS)
        return PlainTextResponse(text, headers=HEADERS)

    files = {p.name: p.read_bytes() for p in STATIC.iterdir() if p.suffix in TYPES}  # small: read once, no thread

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in files:
            return PlainTextResponse("No such file.", 404, headers=HEADERS)
        return Response(files[name], media_type=TYPES[Path(name).suffix], headers=HEADERS)

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204, headers=HEADERS)

    routes = [
        Route("/", index),
        Route("/favicon.ico", no_icon),
        Route("/events", events),
        Route("/timeline.png", timeline),
        Route("/runbook/{name}", runbook),
        Route("/static/{name}", static),
    ]
    if page.kind == "lab":
        routes.append(Route("/explain", explain))
    middleware = (
        [Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "[::1]", "::1"])]
        if local_only
        else []
    )
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


def runbook_text(path: str) -> str | None:
    """A runbook's Markdown (``runbooks/NAME.md``, as explain names it); None for a name that is not one."""
    name = path.removeprefix("runbooks/")
    found = {p.name: p for p in RUNBOOKS.glob("*.md")}
    return found[name].read_text() if name in found else None


_TIMELINES: dict[tuple, bytes] = {}


def timeline_png(row: dict) -> bytes:
    """A finished lesson's GPU timeline as ``kailab evidence`` draws it (one renderer: kailab.evidence.timeline_png)."""
    from kailab.evidence import timeline_png as draw

    key = (row["namespace"], row["record"], row.get("finished"))
    if key not in _TIMELINES:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "timeline.png"
            draw([{"title": row["title"], "passed": row["outcome"] == "PASS", "timeline": row["timeline"]}], path)
            if len(_TIMELINES) >= 64:
                _TIMELINES.clear()
            _TIMELINES[key] = path.read_bytes()
    return _TIMELINES[key]


class Page:
    """What differs between the lab's and the class's page: the template's context from the hub's view, and the
    lookups a click makes."""

    def __init__(self, model):
        self.model = model
        self.kind: str = model.kind

    def title(self, view: dict) -> str:
        return f"kailab — {view.get('whose', 'the lab')}" if self.kind == "lab" else "kailab — the class"

    def context(self, view: dict, selected: str) -> dict:
        view = {**EMPTY[self.kind], **view}
        if self.kind == "lab":
            lessons = view.get("lessons") or []
            shown = next((r for r in lessons if r["key"] == selected), lessons[0] if lessons else None)
            colours = dict((view.get("grid") or {}).get("legend") or [])
            return {"view": view, "shown": shown, "colours": colours}
        learners = view.get("learners") or []
        return {
            "view": view,
            "selected": selected if selected in learners else "",
            "stuck_line": stuck_line,
            "unreadable_line": unreadable_line,
        }

    def explain(self, pod: str):
        return self.model.explain(pod) if self.kind == "lab" else None

    def record(self, view: dict, key: str) -> dict | None:
        """A lesson record the page shows ("namespace/record name"), with its details."""
        if self.kind == "lab":
            return next((r for r in view.get("lessons") or [] if r["key"] == key and r.get("finished")), None)
        for learner in (view.get("status") or {}).values():
            for row in learner["lessons"].values():
                if f"{row['namespace']}/{row.get('record')}" == key and row.get("finished"):
                    return row
        return None
