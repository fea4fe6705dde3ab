"""KAI's admission, the one part the binder needs: a fractional pod's shared-GPU ConfigMap name. Pure."""

from __future__ import annotations

import random
from dataclasses import dataclass

from kailab.runtimes.gpu_ledger.facts import PodFacts

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of k8s.io/apimachinery's rand.String


@dataclass(frozen=True)
class SharedGpuPrep:
    """An action for the driver: what KAI's admission and binder expect of a fractional pod before it binds."""

    namespace: str
    name: str
    uid: str
    prefix: str  # runai/shared-gpu-configmap
    container: str
    annotate: bool  # the pod does not carry the annotation yet

    @property
    def configmaps(self) -> tuple[str, str]:
        """The binder's two ConfigMaps for the fraction's container (capabilities, and direct env vars)."""
        return f"{self.prefix}-{self.container}", f"{self.prefix}-{self.container}-evar"


def shared_gpu_prep(f: PodFacts, scheduler: str, rand: random.Random) -> SharedGpuPrep | None:
    """For a fractional pod KAI has not bound yet: its ``runai/shared-gpu-configmap`` name and ConfigMaps.

    KAI's admission webhook sets that annotation when a fractional pod is created (pkg/admission/webhook/
    v1alpha2/gpusharing/gpu_sharing.go, Mutate), and the binder's gpusharing plugin refuses to bind without it
    ("no desired configmap name found in pod … annotations", pkg/binder/common/gpusharingconfigmap/
    config_map.go). Admission is not run locally, so the ledger sets it: a name prefix ``<owner or pod
    name>-<7 random chars>-shared-gpu``, short enough for KAI's ``-<i>-evar`` and ``-vol`` suffixes (63
    characters). Only the annotation: the env vars and volume admission adds would change the pod's spec,
    which cannot change after creation; without them the binder writes NVIDIA_VISIBLE_DEVICES into the
    ``-evar`` ConfigMap.

    The two ConfigMaps are made here too, owned by the pod as the binder would own them: the binder creates
    them in PreBind and reads them back at once from its informer cache, and on the local runtime that read
    often comes before the cache has the new object ("ConfigMap … -evar not found", measured); the failed
    bind's rollback then races with the retry, which deleted a reservation pod while its GPU id was reused.
    Made early, they are in the cache long before KAI binds; the binder finds them with the same owner
    and only updates their data.
    """
    if not f.asks_fraction or f.finished or f.node is not None or f.scheduler != scheduler or not f.uid:
        return None
    prefix = f.configmap_prefix
    if prefix is None:
        base = (f.owner or f.name)[:33].rstrip(".-")
        prefix = f"{base}-{''.join(rand.choice(_NAME_CHARS) for _ in range(7))}-shared-gpu"
    return SharedGpuPrep(f.namespace, f.name, f.uid, prefix, f.fraction_container, annotate=f.configmap_prefix is None)
