"""How the test workers share the run (``--dist loadfile``, tests/conftest.py): the longest work first, so that side by
side the run ends when the last of it does.

xdist's own loadfile hands the files out by how many tests each holds, and keeps a worker's queue topped up from the
front of the line: a worker running a ten-minute test would be handed the next long file behind it while the other
worker ran out of work. Here each file (a *unit*) carries an estimate, in seconds, from a CI run's measured durations
(``ESTIMATES``; a file it does not name gets a default per test, so a new file is scheduled, if not well, at once):

- a worker about to run out of work gets the longest unit left; one that only needs a second test queued (a worker
  runs a test once it holds the next, or knows there is none) gets the shortest — never a long file stuck behind a
  long test;
- a test that must have the machine to itself (marker ``alone``; its file is in ``ALONE``) is handed out first, and
  while it is unfinished the other workers get only the shortest units, so it never waits behind a long test;
- files that run one at a time (``ONE_AT_A_TIME``: the kind tests) are not handed out side by side to wait;
- a file in ``SPLIT`` has independent tests (each worker has its own lab): each test is a unit of its own, so both
  workers share its long tests.

At the end of a run the measured time of each file that is off its estimate by more than half is printed, with the
line to put in ``ESTIMATES`` (tests/conftest.py, ``pytest_terminal_summary``).
"""

from __future__ import annotations

from collections import defaultdict

# Seconds per file (a SPLIT file: per test), from the CI runs of 2026-11-27 (pytest --durations and the run's summary; 2 workers, 2 cores).
ESTIMATES: dict[str, float] = {
    "tests/kind/test_kind_e2e.py": 700,
    "tests/kind/test_kind_class.py": 220,
    "tests/fleet/test_under_load_fleet.py": 90,
    "tests/fleet/test_kai.py": 420,
    "tests/fleet/test_runbooks_on_kai.py": 450,
    "tests/fleet/test_existing_fleet.py": 330,
    "tests/fleet/test_time_fairshare_fleet.py": 310,
    "tests/fleet/test_class_fleet.py": 250,
    "tests/fleet/test_demo_side_by_side_fleet.py": 200,
    "tests/fleet/test_joined_commands_fleet.py": 180,
    "tests/fleet/test_operators_on_kai.py": 23,
    "tests/fleet/test_lesson_fleet.py": 60,
    "tests/fleet/test_lesson_citations.py": 0,
    "tests/fleet/test_class_network_fleet.py": 125,
    "tests/fleet/test_class_view_fleet.py": 120,
    "tests/fleet/test_class_isolation_fleet.py": 120,
    "tests/fleet/test_page_fleet.py": 120,
    "tests/fleet/test_explain_fleet.py": 70,
    "tests/fleet/test_untrusted_fleet.py": 65,
    "tests/fleet/test_fractions_fleet.py": 73,
    "tests/badinput/test_join_causes.py": 65,
    "tests/fleet/test_evidence_fleet.py": 27,
    "tests/fleet/test_scheduler_control_fleet.py": 25,
    "tests/fleet/test_topology_fleet.py": 20,
    "tests/fleet/test_words_on_kai.py": 13,
    "tests/fleet/test_local_fleet.py": 12,
    # beside a lab's tests (a quiet machine runs all of tests/unit and tests/badinput in under 3 minutes of one worker)
    "tests/unit/test_wheel.py": 8,
    "tests/badinput/test_by_category.py": 60,
}
TASK = "tests/fleet/test_tasks_on_kai.py::test_unchanged_fails_and_solution_passes"
ESTIMATES |= {
    f"{TASK}[{name}]": seconds
    for name, seconds in {
        "fairshare-task-1": 60,
        "time-fairshare-task-1": 300,
        "elastic-task-1": 140,
        "challenge-ticket-5": 60,
        "pytorchjob-task-1": 110,
        "reclaim-task-1": 105,
        "priority-task-1": 100,
        "challenge-ticket-7": 100,
        "ray-autoscale-task-1": 46,
        "consolidation-task-1": 95,
        "gang-task-1": 90,
        "challenge-ticket-6": 90,
        "hierarchy-task-1": 90,
        "borrow-task-1": 45,
        "preempt-delay-task-1": 75,
        "baseline-task-1": 37,
        "ray-gang-task-1": 65,
        "quota-task-1": 113,
        "jobset-lws-task-1": 65,
        "challenge-ticket-1": 35,
        "topology-task-1": 55,
        "challenge-ticket-4": 55,
        "challenge-ticket-3": 45,
        "fractions-task-1": 40,
        "staleness-task-1": 35,
        "protection-task-1": 30,
        "ray-sharing-task-1": 29,
        "placement-task-1": 29,
        "challenge-ticket-8": 29,
        "challenge-ticket-2": 27,
        "challenge-ticket-9": 27,
        "not-a-gang-task-1": 18,
    }.items()
}
ESTIMATES[
    "tests/fleet/test_tasks_on_kai.py::test_a_joined_learner_sets_fails_and_solves_a_challenge_and_the_instructor_sees_it"
] = 85
# Files whose tests do not depend on one another: each test a unit (each worker runs them in its own lab).
SPLIT = frozenset({"tests/fleet/test_tasks_on_kai.py"})
# Files with a test marked ``alone`` (tests/conftest.py refuses an ``alone`` test whose file is not here).
ALONE = frozenset({"tests/fleet/test_under_load_fleet.py"})
# Folders whose files run one at a time (tests/kind/conftest.py's lock: each makes the kind cluster ``kailab``): one
# is not handed out while another worker has one unfinished, unless nothing else is left.
ONE_AT_A_TIME = ("tests/kind/",)
# A test the table does not name, by folder (a lab's test: most take seconds, a lesson run a minute or two; the
# others about a tenth of a second each, under CI's load).
PER_TEST_DEFAULT = {"tests/fleet/": 20.0, "tests/kind/": 300.0}
UNIT_TEST_DEFAULT = 0.1
# A worker whose queued work is estimated above this only needs a second test queued: it gets the shortest unit.
BUDDY = 30.0


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def unit_of(nodeid: str) -> str:
    """The unit a test is handed out in: its file, or itself when its file is SPLIT."""
    return nodeid if file_of(nodeid) in SPLIT else file_of(nodeid)


def default_per_test(nodeid: str) -> float:
    return next((s for folder, s in PER_TEST_DEFAULT.items() if nodeid.startswith(folder)), UNIT_TEST_DEFAULT)


def estimates(nodeids: list[str]) -> dict[str, float]:
    """Each test's estimated seconds: its own entry, else an even part of its file's, else the mean of its file's
    tests that have one (a new task in the tasks file), else the default per test."""
    per_file: dict[str, list[str]] = defaultdict(list)
    for nodeid in nodeids:
        per_file[file_of(nodeid)].append(nodeid)
    out = {}
    for file, tests in per_file.items():
        named = [ESTIMATES[n] for n in tests if n in ESTIMATES]
        for nodeid in tests:
            if nodeid in ESTIMATES:
                out[nodeid] = ESTIMATES[nodeid]
            elif file in ESTIMATES:
                out[nodeid] = ESTIMATES[file] / len(tests)
            else:
                out[nodeid] = sum(named) / len(named) if named else default_per_test(nodeid)
    return out


def exclusive(nodeid: str) -> str | None:
    return next((folder for folder in ONE_AT_A_TIME if nodeid.startswith(folder)), None)


def pick(units: dict[str, float], queued: float, alone_elsewhere: bool, held: frozenset[str] = frozenset()) -> str:
    """The unit to hand a worker whose unfinished work is estimated at ``queued`` seconds: the longest (an ``alone``
    one first) when it is about to run out, else, or while another worker's ``alone`` test is unfinished, the
    shortest; not one of a ``ONE_AT_A_TIME`` folder another worker holds (``held``) while another is left."""
    free = {u: s for u, s in units.items() if exclusive(u) not in held}
    units = free or units
    if alone_elsewhere or queued > BUDDY:
        return min(units, key=lambda u: (units[u], u))
    return max(units, key=lambda u: (file_of(u) in ALONE, units[u], u))


def make_scheduler(config, log):
    """xdist's loadfile scheduler, handing out units as above (imported only when xdist runs the tests)."""
    from xdist.scheduler import LoadScopeScheduling

    class Balanced(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _assign_work_unit(self, node) -> None:
            assert self.workqueue
            if not hasattr(self, "estimate"):
                self.estimate = estimates(list(self.collection or []))
            est = self.estimate
            units = {u: sum(est.get(n, 0.0) for n in tests) for u, tests in self.workqueue.items()}
            unfinished = {
                w: [n for tests in work.values() for n, done in tests.items() if not done]
                for w, work in self.assigned_work.items()
            }
            queued = sum(est.get(n, 0.0) for n in unfinished.get(node, []))
            elsewhere = [n for w, ns in unfinished.items() if w is not node for n in ns]
            alone_elsewhere = any(file_of(n) in ALONE for n in elsewhere)
            held = frozenset(folder for n in elsewhere if (folder := exclusive(n)))
            scope = pick(units, queued, alone_elsewhere, held)
            work_unit = self.workqueue.pop(scope)
            self.assigned_work.setdefault(node, {})[scope] = work_unit
            collection = self.registered_collections[node]
            node.send_runtest_some([collection.index(n) for n, done in work_unit.items() if not done])

    return Balanced(config, log)


def simulate(seconds: dict[str, float], workers: int = 2, lab_start: float = 60.0, scheduler=None) -> dict[str, list]:
    """Run the scheduler over fake workers whose tests take ``seconds`` each (a lab's first test on a worker also
    starts it), with xdist's rules (a worker runs a test once it holds the next or is told there is none) and
    conftest's machine lock (an ``alone`` test waits for the others' tests to end; theirs wait for it), and the kind
    tests' lock (one at a time). Returns each
    worker's runs, (start, end, nodeid)."""
    from types import SimpleNamespace

    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"], option=SimpleNamespace(loadscopereorder=True))

    class Node:
        def __init__(self, name: str):
            self.gateway = SimpleNamespace(id=name)
            self.shutting_down = False
            self.pending: list[int] = []
            self.runs: list[tuple[float, float, str]] = []
            self.lab = False

        def send_runtest_some(self, indices: list[int]) -> None:
            self.pending.extend(indices)

        def shutdown(self) -> None:
            self.shutting_down = True

    collection = list(seconds)

    class Quiet:
        def __getattr__(self, name: str):
            return self

        def __call__(self, *args) -> None:
            pass

    sched = (scheduler or make_scheduler)(config, Quiet())
    nodes = [Node(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
    for node in nodes:
        sched.add_node_collection(node, collection)
    sched.schedule()
    now, running = 0.0, {}  # node -> (end, index)
    while True:
        alone_busy = any(file_of(collection[i]) in ALONE for _, i in running.values())
        for node in nodes:
            if node in running or not node.pending or (len(node.pending) < 2 and not node.shutting_down):
                continue
            nodeid = collection[node.pending[0]]
            if alone_busy or (file_of(nodeid) in ALONE and running):
                continue
            if (folder := exclusive(nodeid)) and any(exclusive(collection[i]) == folder for _, i in running.values()):
                continue  # tests/kind/conftest.py's lock
            took = seconds[nodeid] + (lab_start if nodeid.startswith("tests/fleet/") and not node.lab else 0.0)
            node.lab |= nodeid.startswith("tests/fleet/")
            running[node] = (now + took, node.pending[0])
            node.runs.append((now, now + took, nodeid))
            alone_busy |= file_of(nodeid) in ALONE
        if not running:
            break
        node = min(running, key=lambda n: running[n][0])
        now, index = running.pop(node)
        node.pending.pop(0)
        sched.mark_test_complete(node, index)
    return {node.gateway.id: node.runs for node in nodes}
