"""A class across a network, on the real KAI: the instructor's lab in a network namespace of its own, two learners
in two others, joined only by veth pairs this test makes (on a bridge in the instructor's namespace: the room's
switch), with no route out of any of them.

The instructor runs ``kailab up --address`` and ``class up --out``; each learner, with nothing but their kubeconfig
and kailab, joins across the link and runs the placement and fairshare lessons at the same time as the other —
their scheduler reconfigured through their SchedulingShard, their fair shares read through the API server (published
on their shard by the supervisor) — with the verdicts a lab of one's own gives (tests/golden/). From a learner's
namespace only the API server's port of the lab answers (and what class up names as open); every other port the
lab's processes listen on is closed to them. A learner's file used where the address cannot be reached says so,
naming it, within 10 seconds. A task one learner hands in across the link is graded on the instructor's side while
the other's slice is reset, and the reset learner's file works on their clean slice.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from golden_rows import rows  # tests/fleet/golden_rows.py
from networks import machine_network  # tests/networks.py

from kailab.progress import Progress
from kailab.runtimes.local import LocalRuntime

pytestmark = [pytest.mark.fleet, pytest.mark.kai]

GOLDEN = Path(__file__).parent.parent / "golden"
SOLUTION = Path(__file__).parents[2] / "instructor" / "solutions" / "tasks" / "quota-1.yaml"  # the instructor's
IN_CI = os.environ.get("CI", "").lower() == "true"
ROOM = "10.99.0"  # the room's network: the instructor .1, the learners .2 and .3
INSTRUCTOR = f"{ROOM}.1"
LEARNERS = {"ann": (f"{ROOM}.2", ["placement", "fairshare"]), "bob": (f"{ROOM}.3", ["fairshare", "placement"])}


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, **kw)
    assert proc.returncode == 0, (argv, proc.stderr)
    return proc


class Namespace:
    """A network namespace held open by a process of ours (``unshare --net sleep``); commands run in it via
    ``nsenter``. Ending the holder (and what ran in it) removes the namespace and its veth ends."""

    def __init__(self, name: str):
        self.name = name
        self.holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "3600"])
        deadline = time.monotonic() + 10
        while os.readlink(f"/proc/{self.holder.pid}/ns/net") == os.readlink("/proc/self/ns/net"):
            assert time.monotonic() < deadline, "unshare did not make a network namespace"
            time.sleep(0.05)
        self.ip("link", "set", "lo", "up")

    @property
    def pid(self) -> int:
        return self.holder.pid

    def enter(self) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.pid}/ns/net", "--"]

    def ip(self, *args: str) -> subprocess.CompletedProcess:
        return _run([*self.enter(), "ip", *args])

    def ip_json(self, *args: str) -> list[dict]:
        return json.loads(self.ip("-j", *args).stdout or "[]")

    def kailab(self, home: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        env = {**os.environ, "KAILAB_HOME": str(home)}
        return subprocess.run(
            [*self.enter(), sys.executable, "-m", "kailab", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )

    def python(self, code: str) -> str:
        return _run([*self.enter(), sys.executable, "-c", code]).stdout

    def close(self) -> None:
        self.holder.kill()
        self.holder.wait(10)


def connects(ns: Namespace, address: str, port: int) -> bool:
    """From ``ns``: does a TCP connection to address:port succeed (within 3 s)?"""
    code = (
        "import socket,sys\ns=socket.socket();s.settimeout(3)\n"
        f"sys.stdout.write(str(s.connect_ex(({address!r},{port}))))"
    )
    return ns.python(code) == "0"


@pytest.fixture(scope="module")
def room(kai_reason, tmp_path_factory):
    """The instructor's namespace with a bridge, a learner's namespace for each learner on a veth to it."""
    missing = [t for t in ("unshare", "nsenter", "ip") if shutil.which(t) is None]
    if kai_reason or missing or os.geteuid() != 0:
        why = kai_reason or (f"needs {', '.join(missing)}" if missing else "needs root to make network namespaces")
        if IN_CI:
            pytest.fail(f"CI must prove a class across a network: {why}")
        pytest.skip(why)
    home = tmp_path_factory.mktemp("instructor")
    with machine_network():  # Go modules, if need be: on the machine's network
        LocalRuntime(home=home).ensure_builds(True, Progress())
    made: list[Namespace] = []
    try:
        instructor = Namespace("instructor")
        made.append(instructor)
        instructor.ip("link", "add", "br0", "type", "bridge")
        instructor.ip("addr", "add", f"{INSTRUCTOR}/24", "dev", "br0")
        instructor.ip("link", "set", "br0", "up")
        learners = {}
        for name, (address, _) in LEARNERS.items():
            ns = Namespace(name)
            made.append(ns)
            instructor.ip("link", "add", f"r-{name}", "type", "veth", "peer", "name", "eth0", "netns", str(ns.pid))
            instructor.ip("link", "set", f"r-{name}", "master", "br0")
            instructor.ip("link", "set", f"r-{name}", "up")
            ns.ip("addr", "add", f"{address}/24", "dev", "eth0")
            ns.ip("link", "set", "eth0", "up")
            learners[name] = ns
        yield home, instructor, learners
    finally:
        for ns in reversed(made):
            ns.close()


def test_learners_on_their_own_machines_join_across_the_link_and_run_their_lessons(room, tmp_path):
    home, instructor, learners = room
    # No route leaves the room: each namespace has loopback and its link to the room, and routes only into the room.
    room_net = ipaddress.ip_network(f"{ROOM}.0/24")
    links = {"instructor": {"lo", "br0", *(f"r-{n}" for n in LEARNERS)}, **{n: {"lo", "eth0"} for n in LEARNERS}}
    for ns in (instructor, *learners.values()):
        assert {link["ifname"] for link in ns.ip_json("link", "show")} == links[ns.name], ns.name
        for route in ns.ip_json("route", "show", "table", "all") + ns.ip_json("-6", "route", "show", "table", "all"):
            if route.get("type") in ("local", "broadcast", "multicast", "anycast") or route.get("dev") == "lo":
                continue
            dst = route.get("dst", "default")
            assert dst != "default", (ns.name, route)
            net = ipaddress.ip_network(dst, strict=False)
            assert net.subnet_of(room_net) if net.version == 4 else net.is_link_local, (ns.name, route)
    assert not connects(learners["ann"], "192.0.2.1", 443)  # nothing outside answers: there is no way there

    up = instructor.kailab(home, "up", "--runtime", "local", "--address", INSTRUCTOR)
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        creds = tmp_path / "creds"
        klass = instructor.kailab(
            home, "class", "up", *[a for n in LEARNERS for a in ("--learner", n)], "--out", str(creds)
        )
        assert klass.returncode == 0, klass.stderr[-3000:]
        server = yaml.safe_load((creds / "ann.kubeconfig").read_text())["clusters"][0]["cluster"]["server"]
        assert server.startswith(f"https://{INSTRUCTOR}:"), server
        api_port = int(server.rsplit(":", 1)[1])
        assert f"Learners reach the lab at {server} (TCP port {api_port})" in klass.stdout, klass.stdout

        # Only the API server's port answers a learner: every other port the lab listens on is closed to them
        # (or named by class up as open: KAI v0.17.0's podgroup-controller, which ignores its bind address).
        listening = json.loads(
            instructor.python(
                "import json, psutil\n"
                f"from kailab.runtimes.local import LocalRuntime\nrt = LocalRuntime(home=__import__('pathlib').Path({str(home)!r}))\n"
                "ports = {c.laddr.port for i in rt.processes() for c in psutil.Process(i.pid).net_connections('inet')"
                " if c.status == psutil.CONN_LISTEN}\nprint(json.dumps(sorted(ports)))"
            )
        )
        assert api_port in listening and len(listening) > 10, listening  # etcd, kwok, KAI's, the schedulers…
        answered = [p for p in listening if connects(learners["ann"], INSTRUCTOR, p)]
        also = klass.stdout.split("Also listening", 1)[1] if "Also listening" in klass.stdout else ""
        named = {int(p) for p in re.findall(r"\]?:(\d+)\b", also)}
        assert api_port in answered and set(answered) - {api_port} == named, (answered, klass.stdout)

        # Each learner joins with their file alone, across the link, and runs their lessons beside the other.
        homes = {n: tmp_path / f"{n}-laptop" for n in LEARNERS}
        for name, ns in learners.items():
            joined = ns.kailab(homes[name], "join", str(creds / f"{name}.kubeconfig"), timeout=60)
            assert joined.returncode == 0, joined.stderr
        verdicts: dict[str, list[dict]] = {n: [] for n in LEARNERS}
        for turn in range(2):  # each turn, both learners' lessons at the same time
            running = {
                name: subprocess.Popen(
                    [*ns.enter(), sys.executable, "-m", "kailab", "demo", LEARNERS[name][1][turn], "--json"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env={**os.environ, "KAILAB_HOME": str(homes[name])},
                )
                for name, ns in learners.items()
            }
            for name, proc in running.items():
                out, err = proc.communicate(timeout=900)
                assert proc.returncode in (0, 1) and out.startswith("{"), err[-3000:]
                verdicts[name] += json.loads(out)["verdicts"]
        for name, got in verdicts.items():
            assert [v["scenario"] for v in got] == LEARNERS[name][1]
            for v in got:
                assert v["outcome"] == "PASS", (name, v["scenario"], [c for c in v["checks"] if not c["passed"]])
                golden = json.loads((GOLDEN / v["scenario"] / "verdict.json").read_text())
                assert rows(v, name) == rows(golden), (name, v["scenario"])
            shares = [
                c for v in got if v["scenario"] == "fairshare" for c in v["checks"] if "fair share:" in c["title"]
            ]
            assert [str(c["observed"]) for c in shares[:2]] == ["22", "10"], (
                shares
            )  # KAI's fair shares, read across the link

        # ann hands in a task across the link while the instructor resets bob's slice: her run goes on untouched,
        # the instructor's side grades it from its recording, and bob's same file works on his clean slice.
        env = {**os.environ, "KAILAB_HOME": str(homes["ann"])}
        task = subprocess.Popen(
            [*learners["ann"].enter(), sys.executable, "-m", "kailab", "lesson", "quota", "--task", "1"]
            + ["--file", str(SOLUTION)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        reset = instructor.kailab(home, "class", "reset", "--learner", "bob", timeout=600)
        assert reset.returncode == 0, reset.stderr[-3000:]
        out, err = task.communicate(timeout=900)
        assert task.returncode == 0 and "Handed in" in out, out + err[-3000:]
        status = instructor.kailab(home, "class", "status", "--json", timeout=300)
        report = json.loads(status.stdout)
        assert report["ann"]["tasks"]["quota-task-1"]["outcome"] == "PASS", report["ann"].get("tasks")
        assert report["bob"]["scheduler"] == "running" and not report["bob"]["stuck"], report["bob"]
        again = learners["bob"].kailab(homes["bob"], "demo", "quota", "--json", timeout=900)
        assert json.loads(again.stdout)["verdicts"][0]["outcome"] == "PASS", again.stderr[-3000:]

        # A learner's file where the class's address cannot be reached: one message naming it, within 10 s.
        instructor.ip("link", "set", "r-bob", "down")  # bob's cable pulled
        start = time.monotonic()
        cut = learners["bob"].kailab(homes["bob"], "demo", "quota", timeout=60)
        took = time.monotonic() - start
        assert cut.returncode == 1 and server in cut.stderr and "is the class up" in cut.stderr, cut.stderr
        assert took < 10, took
        assert "Traceback" not in cut.stderr
    finally:
        down = instructor.kailab(home, "down", timeout=600)
        assert down.returncode == 0, down.stderr[-2000:]
