"""Names kailab and KAI agree on: labels, annotations, API groups, namespaces and component names. One home for each.

KAI's own keys are read from kailab/kai_strings.yaml, the one table of what KAI says (checked against its source).
"""

from __future__ import annotations

from kailab.kai_strings import get as kai

# KAI Scheduler's (v0.17.0)
QUEUE_LABEL = kai("label.queue")
OLD_QUEUE_LABEL = "runai/queue"  # Run:ai's older key; KAI v0.17.0 does not read it (a common leftover)
PREEMPTIBILITY_LABEL = kai("label.preemptibility")
PRIORITY_CLASS_LABEL = kai("label.priority-class")  # KAI's pod-grouper reads it before the pods' spec.priorityClassName
MIN_MEMBER_ANNOTATION = kai("annotation.batch-min-member")
POD_GROUP_ANNOTATION = kai("annotation.pod-group-name")
SUBGROUP_LABEL = kai("label.subgroup-name")
# KubeRay's group of a RayCluster's head (ray-operator utils.RayNodeHeadGroupLabelValue), also the name of KAI's
# subgroup for it (pkg/podgrouper/podgrouper/plugins/ray/ray_grouper.go)
RAY_HEAD_GROUP = "headgroup"
RAY_API = "ray.io/v1"  # KubeRay's RayCluster, RayJob, RayService
PYTORCH_API = "kubeflow.org/v1"  # Kubeflow training-operator's PyTorchJob (and its other jobs)
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
LWS_API = "leaderworkerset.x-k8s.io/v1"
GPU_FRACTION_ANNOTATION = kai("annotation.gpu-fraction")
GPU_MEMORY_ANNOTATION = kai("annotation.gpu-memory")  # MiB of one GPU (pkg/common/constants/constants.go, GpuMemory)
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"  # a node's MiB per GPU; KAI needs it for gpu-memory requests
SKIP_PODGROUPER_ANNOTATION = kai("annotation.skip-podgrouper")
# Read by KAI's pod-grouper from a workload's owners, then its pods, into the PodGroup's spec (policies lessons)
PREEMPTION_DELAY_ANNOTATION = kai("annotation.preemption-delay")
STALENESS_ANNOTATION = kai("annotation.staleness-grace-period")
GPU_GROUP_LABEL = kai("label.gpu-group")  # the binder's: pods sharing one GPU carry the same value
QUEUE_API = f"{kai('api.scheduling')}/v2"
PODGROUP_API = f"{kai('api.scheduling')}/v2alpha2"
BIND_REQUEST_API = f"{kai('api.scheduling')}/v1alpha2"
SHARD_API = "kai.scheduler/v1"  # SchedulingShard: one scheduler per partition (KAI's operator; kailab's supervisor)
# "kai-scheduler" means four things; one name for each meaning:
KAI_SCHEDULER_NAME = (
    "kai-scheduler"  # the scheduler a pod asks for (spec.schedulerName, the components' --scheduler-name)
)
CHALLENGE_NAMESPACE = "kailab-challenge"  # every challenge runs here (a class learner's slice has it: kailab/tasks.py)
KAI_NAMESPACE = "kai-scheduler"  # the namespace KAI's chart installs into (and the local runtime makes)
KAI_HELM_RELEASE = "kai-scheduler"  # the Helm release of KAI's chart (kind runtime; preflight's advice)
KAI_SCHEDULER_PROCESS = "kai-scheduler"  # the scheduler's binary and process on the local runtime (pids/, logs/)
SHARD_SUPERVISOR = (
    "kailab-shard-supervisor"  # the local runtime's process that runs SchedulingShards (runtimes/shard_supervisor.py)
)
KAI_SCHEDULER_DEPLOYMENT = (
    "kai-scheduler-default"  # what KAI's operator names the scheduler of the chart's default shard
)
# Where KAI's binder puts the pods that reserve a shared GPU (GPU fractions): the namespace, its pods' app label and
# their service account all carry this one name (the binder's --resource-reservation-* defaults).
RESERVATION_NAMESPACE = kai("namespace.resource-reservation")
RESERVATION_APP_LABEL = RESERVATION_NAMESPACE
RESERVATION_SERVICE_ACCOUNT = RESERVATION_NAMESPACE
# The binder's annotations on GPU-sharing pods (pkg/common/constants/constants.go, pkg/binder/binding/resourcereservation/)
RESERVE_ANNOTATION = kai(
    "annotation.reserve-for-gpu-index"
)  # a reservation pod's GPU (the GPU operator's part sets it)
SHARED_GPU_CONFIGMAP_ANNOTATION = "runai/shared-gpu-configmap"
FRACTION_CONTAINER_ANNOTATION = "gpu-fraction-container-name"
# KAI's operator (kind, existing clusters): its Deployment, and the cluster's Config object it reconciles from
KAI_OPERATOR = "kai-operator"
KAI_CONFIG_NAME = "kai-config"

# KWOK's
COMPLETE_DELAY_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"
KWOK_TOLERATION = {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}
KWOK_CONTROLLER = ("kube-system", "kwok-controller")  # KWOK's controller Deployment (namespace, name)

# fake-gpu-operator's: a node's simulated GPU pool, and the labels its status exporter puts on a GPU node (kailab's
# fleet writes them too)
POOL_LABEL = "run.ai/simulated-gpu-node-pool"
GPU_OPERATOR_NAMESPACE = "gpu-operator"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB
FAKE_GPU_LABEL = "run.ai/fake.gpu"

DEFAULT_SCHEDULER_NAME = "default-scheduler"  # kube-scheduler's, the baseline beside KAI

# kailab's own: every object it creates carries MANAGED
MANAGED = {"app.kubernetes.io/managed-by": "kailab"}
WORKLOAD_LABEL = "kailab.io/workload"
SCENARIO_LABEL = "kailab.io/scenario"
FLEET_LABEL = "kailab.io/fleet"

GPU = "nvidia.com/gpu"
# On a cluster kailab did not make, each lab's objects also carry its id, so two labs there never
# clean up each other's objects (a lab on a cluster kailab made has no id: the cluster is its own).
LAB_ID_LABEL = "kailab.io/lab-id"

# A class on one cluster (kailab/classroom): each learner's partition is KAI's node pool of that name
NODEPOOL_LABEL = kai("label.node-pool")  # KAI's --nodepool-label-key (its default)
LEARNER_LABEL = "kailab.io/learner"  # on a learner's nodes and class objects
SHARD_METRICS_ANNOTATION = "kailab.io/scheduler-metrics"  # on a shard: its local scheduler's metrics URL
# on a shard the local runtime's supervisor runs: its scheduler's fair shares, the metric samples as Prometheus text,
# which the learner reads through the API server with their own credential (the metrics port stays on loopback)
SHARD_FAIR_SHARES_ANNOTATION = "kailab.io/fair-shares"
RECORD_LABEL = "kailab.io/lesson-record"  # a ConfigMap holding a learner's lesson verdict (kailab/classroom/records.py)
JOINED_LABEL = "kailab.io/joined"  # the ConfigMap a learner's join writes (kailab/classroom/joined.py)

# KAI's topology-aware scheduling (docs/topology/ in KAI v0.17.0): a cluster-scoped Topology object names the node
# labels of each level; a workload's top owner asks for a level by annotation (pkg/podgrouper/podgrouper/plugins/
# constants/constants.go), which the pod-grouper copies into the PodGroup's spec.topologyConstraint.
TOPOLOGY_API = "kai.scheduler/v1alpha1"
TOPOLOGY_ANNOTATION = kai("annotation.topology")
TOPOLOGY_REQUIRED_ANNOTATION = kai("annotation.topology-required-placement")
TOPOLOGY_PREFERRED_ANNOTATION = kai("annotation.topology-preferred-placement")
HOSTNAME_LABEL = "kubernetes.io/hostname"
# A learner's nodes carry this taint (value: the learner) and only their own pods tolerate it, so no one else's pod
# lands there: not the default scheduler's (which knows no partitions), nor one of another partition (KAI's
# predicates honour taints: PodToleratesNodeTaints)
PARTITION_TAINT_KEY = "kailab.io/partition"
