"""kailab's one GPU rule (kailab/gpus.py): what a pod asks for and holds, a node's GPUs in use, a queue's GPUs."""

from kailab import gpus
from kailab.gpus import GpuInUse, for_queue, in_use, per_queue, shared_gpus, used_per_node
from kailab.pods import PodView, pod_gpus

NODE = "kwok-a100-0"
RES = "kai-resource-reservation"


def half(name: str, group: str = "g1", queue: str = "team-frac", node: str = NODE, **kw) -> PodView:
    return PodView(name, queue=queue, phase="Running", node=node, gpus=0.5, gpu_group=group, namespace="lab", **kw)


def reservation(group: str = "g1", node: str = NODE) -> PodView:
    return PodView(f"{node}-{group}", namespace=RES, phase="Running", node=node, gpus=1, gpu_group=group)


def whole(name: str, n: int = 1, queue: str = "team-prod", node: str = NODE, **kw) -> PodView:
    return PodView(name, queue=queue, phase="Running", node=node, gpus=n, namespace="lab", **kw)


def test_two_halves_and_their_reservation_pod_are_one_gpu_in_use_and_one_gpu_of_their_queue():
    pods = [half("a"), half("b"), reservation()]
    assert used_per_node(pods) == {NODE: 1}
    assert shared_gpus(pods) == {(NODE, "g1")}
    assert per_queue(pods) == {"team-frac": 1.0}  # the reservation pod is in no queue, "(no queue)" neither
    assert in_use(pods) == {NODE: [GpuInUse(("team-frac", "team-frac"), shared=True, portion=1.0)]}


def test_a_shared_gpu_counts_once_whether_its_reservation_pod_or_its_fractions_are_seen():
    assert used_per_node([half("a"), half("b")]) == {NODE: 1}  # the reservation pod not seen (yet)
    assert used_per_node([reservation()]) == {NODE: 1}  # fractions gone, KAI not done deleting it: not free yet
    assert in_use([reservation()])[NODE][0].queue == gpus.NO_QUEUE


def test_one_half_holds_half_a_gpu_for_its_queue_and_a_whole_gpu_of_its_node():
    pods = [half("a"), reservation()]
    assert per_queue(pods) == {"team-frac": 0.5}
    assert used_per_node(pods) == {NODE: 1}
    assert in_use(pods)[NODE] == [GpuInUse(("team-frac",), shared=True, portion=0.5)]


def test_point_nine_and_point_three_are_two_gpus_and_whole_pods_one_each():
    pods = [
        PodView("nine", queue="team-frac", phase="Running", node=NODE, gpus=0.9, gpu_group="g2"),
        PodView("three", queue="team-frac", phase="Running", node=NODE, gpus=0.3, gpu_group="g3"),
        reservation("g2"),
        reservation("g3"),
        half("a"),
        half("b"),
        reservation("g1"),
        whole("two", 2),
        whole("other", 1, node="kwok-a100-1"),
    ]
    assert used_per_node(pods) == {NODE: 5, "kwok-a100-1": 1}  # 3 shared + 2 whole
    assert len(shared_gpus(pods)) == 3
    assert round(per_queue(pods)["team-frac"], 6) == 2.2 and per_queue(pods)["team-prod"] == 3
    cells = in_use(pods)[NODE]
    assert [c.shared for c in cells] == [False, False, True, True, True]  # whole ones first
    assert sorted(c.portion for c in cells if c.shared) == [0.3, 0.9, 1.0]


def test_pods_on_two_nodes_with_the_same_group_name_are_two_gpus():
    pods = [half("a"), half("b", node="kwok-a100-1")]
    assert used_per_node(pods) == {NODE: 1, "kwok-a100-1": 1}


def test_a_fraction_bound_before_it_has_a_group_is_a_gpu_of_its_own():
    pods = [half("a", group=""), half("b", group="")]
    assert used_per_node(pods) == {NODE: 2}


def test_pods_being_deleted_hold_their_gpus_until_gone_and_finished_or_pending_pods_hold_none():
    deleting = [half("a", deleting=True), whole("w", deleting=True)]
    assert used_per_node(deleting) == {NODE: 2} and per_queue(deleting) == {"team-frac": 0.5, "team-prod": 1}
    done = [
        PodView("d", queue="q", phase="Succeeded", node=NODE, gpus=1),
        PodView("f", queue="q", phase="Failed", node=NODE, gpus=0.5, gpu_group="g"),
        PodView("p", queue="q", phase="Pending", gpus=1),
    ]
    assert used_per_node(done) == {} and per_queue(done) == {} and shared_gpus(done) == set()
    assert [for_queue(p) for p in done] == [0, 0, 0]


def test_deleting_pods_frees_what_they_held():
    pods = [half("a"), half("b"), reservation(), whole("w", 2)]
    assert used_per_node(pods) == {NODE: 3}
    pods = [p for p in pods if p.name not in ("a", "b")]  # the halves are gone; KAI deletes its reservation pod next
    assert used_per_node(pods) == {NODE: 3}
    pods = [p for p in pods if p.namespace != RES]
    assert used_per_node(pods) == {NODE: 2} and per_queue(pods) == {"team-prod": 2}
    assert used_per_node([]) == {} and per_queue([]) == {}


def test_pods_without_a_queue_label_and_cpu_pods_are_counted_as_kailab_shows_them():
    pods = [whole("x", 1, queue=""), PodView("cpu", queue="q", phase="Running", node=NODE)]
    assert per_queue(pods) == {gpus.NO_QUEUE: 1, "q": 0}
    assert used_per_node(pods) == {NODE: 1}


def _pod(limits=None, requests=None, annotations=None):
    """A pod as the API gives it (its JSON)."""
    res = {k: v for k, v in (("limits", limits), ("requests", requests)) if v is not None}
    return {
        "metadata": {"annotations": annotations} if annotations else {},
        "spec": {"containers": [{"name": "main", "resources": res}]},
    }


def test_what_a_pod_asks_for_whole_gpus_from_limits_or_requests_or_a_fraction():
    assert pod_gpus(_pod(limits={"nvidia.com/gpu": "2"})) == 2
    assert pod_gpus(_pod(requests={"nvidia.com/gpu": "1"})) == 1
    assert pod_gpus(_pod(annotations={"gpu-fraction": "0.5"})) == 0.5
    assert pod_gpus(_pod(annotations={"gpu-fraction": "half"})) == 0
    assert pod_gpus(_pod(limits={"cpu": "1"})) == 0
    assert gpus.whole_asked([({"nvidia.com/gpu": "1"}, None), (None, {"nvidia.com/gpu": 2}), (None, None)]) == 3


def test_how_a_pod_asks_is_the_inverse_of_what_it_asks_for():
    for n in (0, 1, 4, 0.5, 0.25):
        limits, annotations = gpus.request(n)
        assert gpus.asked(gpus.whole_asked([(limits, None)]), gpus.fraction_asked(annotations)) == n
    assert gpus.request(0.5) == ({}, {"gpu-fraction": "0.5"}) and gpus.request(2) == ({"nvidia.com/gpu": "2"}, {})


def test_a_reservation_pod_is_one_asking_whole_gpus_in_kais_namespace():
    assert gpus.is_reservation(RES, 1) and not gpus.is_reservation("lab", 1) and not gpus.is_reservation(RES, 0)
