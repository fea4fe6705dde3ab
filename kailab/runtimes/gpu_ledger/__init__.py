"""Which fake GPU each pod holds: the local runtime's stand-in for fake-gpu-operator's status-updater.

On the kind runtime fake-gpu-operator's status-updater keeps, per node, which pod holds which GPU, and
annotates each of KAI's GPU reservation pods with the GPU it got (``run.ai/reserve_for_gpu_index``;
internal/status-updater/handlers/pod/gpu_reservation_pod_handler.go). KAI v0.17.0's binder waits for that
annotation before it binds a fractional pod (pkg/binder/binding/resourcereservation/resource_reservation.go,
waitForGPUReservationPodAllocation: "Reached timeout while waiting for GPU reservation pod to be allocated"
after 40 s). The local runtime has no fake-gpu-operator, so this package plays that part, and the one part of
KAI's admission webhook the binder cannot do without. One module per job:

- :mod:`.facts` — what it reads of a pod and a node (pure).
- :mod:`.topology` — which GPU id each pod holds, and the annotations to write (pure; no I/O).
- :mod:`.admission` — what KAI's admission would have set on a fractional pod (pure).
- :mod:`.store` — the ledger as a ConfigMap: written by the process, read by anyone (:func:`.store.read_ledger`).
- :mod:`.driver` — the loop: watches nodes and pods, feeds a Topology, writes annotations and the ledger.
- :mod:`.__main__` — the process the local runtime starts (``python -m kailab.runtimes.gpu_ledger``), with
  its health server.

How many GPUs a pod holds, and whether it is one of KAI's reservation pods, is :mod:`kailab.gpus`'s rule.

Its format next to fake-gpu-operator's (v0.2.0), and why they differ:

- The annotation is the same: ``run.ai/reserve_for_gpu_index: <gpu id>`` on the reservation pod, left as it
  is when already set. KAI treats the value as an opaque device id (it puts it in NVIDIA_VISIBLE_DEVICES).
  fake-gpu-operator's ids are UUID-like ("GPU-<uuid>", one per node and index); the ledger's are the index,
  "0" … "gpus-1": there is no device plugin here whose ids they must match, and an index is what a learner
  reads in ``kailab watch`` and what the annotation's name says.
- The store differs: fake-gpu-operator keeps one ConfigMap per node (``topology-<node>`` in ``gpu-operator``,
  key ``topology.yml``) listing every GPU with the one pod it is allocated by; the ledger keeps one ConfigMap,
  ``kailab-gpu-ledger`` in ``kai-resource-reservation``, one key per node. One object, because a reader
  (a test, a view) gets the whole fleet in one GET and the lab has no ``gpu-operator`` namespace; and each
  GPU lists all its holders — a reservation pod *and* the fractional pods on it, with their portions —
  which fake-gpu-operator's "allocated by" (one pod) cannot say. Its format is in :mod:`.store`.
"""

PROCESS_NAME = "kailab-gpu-ledger"
