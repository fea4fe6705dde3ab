"""The GPU ledger's process (``python -m kailab.runtimes.gpu_ledger``): the driver, and /healthz on a loopback port."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kailab.labels import KAI_SCHEDULER_NAME
from kailab.runtimes.gpu_ledger.driver import Driver

log = logging.getLogger("kailab.gpu_ledger")


class _Health(BaseHTTPRequestHandler):
    driver: Driver

    def do_GET(self):  # noqa: N802 - http.server's name
        ok, why = self.driver.healthy()
        body = (why + "\n").encode()
        self.send_response(
            200 if ok and self.path.startswith("/healthz") else 503 if self.path.startswith("/healthz") else 404
        )
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # quiet: the health check polls
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kailab.runtimes.gpu_ledger", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--health-port", type=int, required=True, help="serve /healthz on 127.0.0.1:PORT")
    parser.add_argument("--scheduler-name", default=KAI_SCHEDULER_NAME)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("kubernetes").setLevel(logging.WARNING)
    logging.getLogger("urllib3").setLevel(logging.ERROR)

    from kailab.collector import settle
    from kailab.kube import Kube

    driver = Driver(Kube(args.kubeconfig), args.scheduler_name)
    settle()  # the modules just read live as long as the process: no full collection walks them (kailab/collector.py)
    handler = type("Health", (_Health,), {"driver": driver})
    server = ThreadingHTTPServer(("127.0.0.1", args.health_port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: driver.stopping.set())
    signal.signal(signal.SIGINT, lambda *_: driver.stopping.set())
    log.info("started; health on 127.0.0.1:%d/healthz", args.health_port)
    try:
        driver.start()
        driver.run()
        if driver.synced.is_set() and driver.topology.version != driver.written:
            driver.write()
    finally:
        log.info("stopped")
        logging.shutdown()
        # Watch threads may be blocked reading TLS: leave without finalising them (kube.Watched.stop says why).
        os._exit(0)


if __name__ == "__main__":
    main()
