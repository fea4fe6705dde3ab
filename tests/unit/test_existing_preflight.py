"""Adopting a cluster: what ``kailab up --runtime existing`` reads, and the findings it makes of it.

The findings are pure (facts → rows). What is read goes through the real kubernetes client, here
against a small HTTP server that answers like an API server with canned objects (no cluster runs).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

import pytest

from kailab import versions
from kailab.fleet import load_fleet
from kailab.kube import Kube
from kailab.ownership import Owner
from kailab.preflight import KAI_CRDS, OK, PROBLEM, WARN, Facts, SchedulerDeployment, blocking, findings, image_version

IMAGE = f"ghcr.io/kai-scheduler/kai-scheduler/scheduler:{versions.KAI_VERSION}"
VERSION = {
    "major": "1",
    "minor": "35",
    "gitVersion": "v1.35.4",
    "gitCommit": "x",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.26",
    "compiler": "gc",
    "platform": "linux/amd64",
}
NOT_FOUND = (404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})


def crd(name: str) -> dict:
    plural, _, group = name.partition(".")
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "scope": "Cluster",
            "names": {"kind": plural.title(), "plural": plural},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }


def node(name: str, gpus: int, labels: dict | None = None) -> dict:
    alloc = {"cpu": "8", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {"metadata": {"name": name, "labels": labels or {}}, "status": {"allocatable": alloc, "capacity": alloc}}


def deployment(namespace: str, name: str, image: str, ready: int) -> dict:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "scheduler", "image": image}]},
            },
        },
        "status": {"readyReplicas": ready},
    }


def listing(kind: str, items: list) -> dict:
    return {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}


class FakeApi:
    """An HTTP server that answers GETs from a table: path → (status, body), or a function of the query."""

    def __init__(self, routes: dict):
        self.routes, self.seen = routes, []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                url = urlparse(self.path)
                path = unquote(url.path).rstrip("/")  # as an API server reads it (%3A is :)
                api.seen.append((path, parse_qs(url.query)))
                answer = api.routes.get(path, NOT_FOUND)
                if callable(answer):
                    answer = answer(parse_qs(url.query))
                code, body = answer if isinstance(answer, tuple) else (200, answer)
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def kubeconfig(self, folder) -> str:
        path = folder / "kubeconfig.yaml"
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "c",
                    "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{self.server.server_port}"}}],
                    "users": [{"name": "u", "user": {"token": "t"}}],
                    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                }
            )
        )
        return str(path)

    def close(self):
        self.server.shutdown()


def by_field(items: list, kind: str):
    """A list route that honours ``fieldSelector=metadata.name=X`` (what kailab asks)."""

    def answer(query):
        wanted = (query.get("fieldSelector") or [""])[0].partition("metadata.name=")[2]
        return listing(kind, [i for i in items if not wanted or i["metadata"]["name"] == wanted])

    return answer


@pytest.fixture
def api_with(tmp_path):
    made = []

    def make(routes: dict) -> tuple[FakeApi, Kube]:
        api = FakeApi({"/version": VERSION, **routes})
        made.append(api)
        return api, Kube(api.kubeconfig(tmp_path))

    yield make
    for api in made:
        api.close()


def helm_installed(gpus_per_node=(8, 8, 8, 8)) -> dict:
    """A cluster with KAI installed by its Helm chart (GPU sharing on), and GPU nodes."""
    return {
        **{f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{c}": crd(c) for c in KAI_CRDS},
        "/api/v1/nodes": listing(
            "NodeList", [node(f"gpu-{i}", g) for i, g in enumerate(gpus_per_node)] + [node("cpu-0", 0)]
        ),
        "/api/v1/pods": listing("PodList", []),
        "/apis/apps/v1/deployments": by_field(
            [deployment("kai-scheduler", "kai-scheduler-default", IMAGE, 1)], "DeploymentList"
        ),
        "/apis/kai.scheduler/v1/configs/kai-config": {
            "apiVersion": "kai.scheduler/v1",
            "kind": "Config",
            "metadata": {"name": "kai-config"},
            "spec": {"admission": {"gpuSharing": True}},
        },
    }


def test_a_cluster_with_kai_from_its_chart_and_32_gpus_is_all_ok(api_with):
    from kailab.runtimes.existing_facts import read_facts

    api, kube = api_with(helm_installed())
    facts = read_facts(kube, Owner("abc"), None)
    assert facts.crds == frozenset(KAI_CRDS) and facts.gpu_sharing is True
    assert facts.scheduler == SchedulerDeployment("kai-scheduler", "kai-scheduler-default", IMAGE, 1, 1)
    assert dict(facts.gpu_nodes) == {"gpu-0": 8, "gpu-1": 8, "gpu-2": 8, "gpu-3": 8}  # cpu-0 is not a GPU node
    rows = findings(facts)
    assert [(f.check, f.status) for f in rows if f.status != OK] == []
    assert not blocking(rows)
    pods_query = next(q for path, q in api.seen if path == "/api/v1/pods")
    assert pods_query["fieldSelector"] == ["spec.schedulerName=kai-scheduler,spec.nodeName!="]


def test_the_local_lab_reads_as_kai_without_its_deployment_a_warning_not_a_problem(api_with):
    """kailab's local runtime runs KAI as processes: the CRDs are there, the Deployment and Config are not."""
    from kailab.runtimes.existing_facts import read_facts

    routes = helm_installed((8, 8, 8, 4, 4))
    routes.pop("/apis/kai.scheduler/v1/configs/kai-config")
    routes["/apis/apps/v1/deployments"] = by_field([], "DeploymentList")
    routes["/api/v1/pods"] = listing(
        "PodList",
        [{"metadata": {"name": f"p{i}", "namespace": "x"}, "spec": {"containers": [{"name": "c"}]}} for i in range(3)],
    )
    _, kube = api_with(routes)
    facts = read_facts(kube, Owner("abc"), None)
    assert facts.scheduler is None and facts.kai_bound_pods == 3 and facts.gpu_sharing is None
    rows = {f.check: f for f in findings(facts)}
    assert (
        rows["KAI's scheduler"].status == WARN and "3 pods were bound by kai-scheduler" in rows["KAI's scheduler"].found
    )
    assert rows["GPU sharing"].status == WARN and rows["GPU nodes"].status == OK
    assert not blocking(list(rows.values()))


def test_no_kai_and_no_gpus_are_problems_with_what_to_do(api_with):
    from kailab.runtimes.existing_facts import read_facts

    _, kube = api_with(
        {
            "/api/v1/nodes": listing("NodeList", [node("cpu-0", 0)]),
            "/api/v1/pods": listing("PodList", []),
            "/apis/apps/v1/deployments": by_field([], "DeploymentList"),
        }
    )
    problems = {f.check: f for f in blocking(findings(read_facts(kube, Owner("abc"), None)))}
    assert set(problems) == {"KAI's CRDs", "GPU nodes"}
    assert f"--version {versions.KAI_VERSION}" in problems["KAI's CRDs"].todo
    assert "--kwok" in problems["GPU nodes"].todo


def test_with_kwok_a_node_of_the_fleets_name_that_is_not_ours_blocks(api_with):
    from kailab.runtimes.existing_facts import read_facts

    routes = helm_installed(())
    routes["/api/v1/nodes"] = listing(
        "NodeList",
        [
            node("kwok-a100-0", 8, {"app.kubernetes.io/managed-by": "kailab"}),
            node("kwok-h100-0", 8, {"app.kubernetes.io/managed-by": "kailab", "kailab.io/lab-id": "abc"}),
        ],
    )
    _, kube = api_with(routes)
    facts = read_facts(kube, Owner("abc"), load_fleet())
    assert facts.kwok == "absent" and facts.taken_nodes == ("kwok-a100-0",)  # kwok-h100-0 is this lab's
    assert [f.check for f in blocking(findings(facts))] == ["KWOK fleet"]


def test_an_api_server_that_does_not_answer_is_the_only_finding():
    rows = findings(Facts())
    assert [(f.check, f.status) for f in rows] == [("API server", PROBLEM)]


@pytest.mark.parametrize(
    "image, tag",
    [
        ("ghcr.io/kai-scheduler/kai-scheduler/scheduler:v0.17.0", "v0.17.0"),
        ("registry:5000/kai/scheduler:v0.16.2@sha256:abc", "v0.16.2"),
        ("registry:5000/kai/scheduler", None),
        ("scheduler", None),
    ],
)
def test_image_version(image, tag):
    assert image_version(image) == tag


def test_another_kai_version_or_a_scheduler_not_ready_are_said():
    base = Facts(server="v1.35.4", crds=frozenset(KAI_CRDS), gpu_nodes=(("g", 32.0),), gpu_sharing=True)
    old = findings(
        Facts(
            **{
                **base.__dict__,
                "scheduler": SchedulerDeployment("kai", "kai-scheduler-default", "r/scheduler:v0.16.0", 1, 1),
            }
        )
    )
    row = next(f for f in old if f.check == "KAI's version")
    assert row.status == WARN and "v0.16.0" in row.found and versions.KAI_VERSION in row.found
    down = findings(
        Facts(**{**base.__dict__, "scheduler": SchedulerDeployment("kai", "kai-scheduler-default", IMAGE, 0, 1)})
    )
    assert [f.check for f in blocking(down)] == ["KAI's scheduler"]


def test_fair_shares_are_read_through_the_api_servers_service_proxy(api_with, tmp_path):
    from kailab import fairshare
    from kailab.labstate import LabState
    from kailab.runtimes.existing import ExistingRuntime

    metrics = 'kai_queue_fair_share_gpu{queue_name="alice-team-prod"} 12\n'
    api, kube = api_with(
        {
            "/api/v1/services": by_field(
                [
                    {
                        "metadata": {"name": "kai-scheduler-default", "namespace": "kai-scheduler"},
                        "spec": {"ports": [{"name": "http-metrics", "port": 8080}]},
                    }
                ],
                "ServiceList",
            ),
            "/api/v1/namespaces/kai-scheduler/services/kai-scheduler-default:http-metrics/proxy/metrics": (
                200,
                metrics,
            ),
        }
    )
    home = tmp_path / "lab"
    home.mkdir()
    LabState("existing", kube.kubeconfig, lab_id="abc").write(home)
    read = ExistingRuntime(home).capabilities().metrics
    assert read is not None and fairshare.parse(read())["alice-team-prod"].gpu == 12


def test_without_the_schedulers_service_there_are_no_fair_shares(api_with, tmp_path):
    from kailab.labstate import LabState
    from kailab.runtimes.existing import ExistingRuntime

    _, kube = api_with({"/api/v1/services": by_field([], "ServiceList")})
    home = tmp_path / "lab"
    home.mkdir()
    LabState("existing", kube.kubeconfig, lab_id="abc").write(home)
    assert ExistingRuntime(home).capabilities().metrics is None
