"""The live pages: ``kailab serve`` (a lab, or a joined learner's slice) and ``kailab class serve`` (the class).

For the projector, or a learner's browser beside their terminal.

- :mod:`.watches` — the cluster, watched once per server (pods, nodes, queues, lesson records, namespaces, shards);
- :mod:`.models` — what each page shows, made by the same views ``status``, ``watch``, ``explain`` and ``class status``
  use (nothing decided twice);
- :mod:`.hub` — the one thread that makes a page's view again when its watches change, and tells the browsers;
- :mod:`.app` — the Starlette app: the page, its regions again as server-sent events, a pod's explanation, a
  lesson's GPU timeline; read-only, every text escaped (Jinja2, autoescape), everything served from the package;
- :mod:`.serve` — binding the address (clear errors), uvicorn until Ctrl-C.
"""
