"""Zonal volume topology: a pod that mounts a bound PersistentVolume must run where the volume is.

A PersistentVolume's ``nodeAffinity`` terms are OR'd, so a pod's volume requirements are a list of
alternatives (the cross product over its volumes); a node must satisfy one of them. An unbound claim
whose StorageClass lists ``allowedTopologies`` is constrained the same way, if StorageClasses are given,
whether the class binds Immediately or WaitForFirstConsumer (as Karpenter computes it). An unbound claim of
no class can only bind statically, to a volume that exists: its pod waits until it is bound.
These requirements narrow the node, never the pod's own affinity, so topology spread counts are
unaffected (as in Karpenter).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.apis.v1.labels import LABEL_HOSTNAME
from autoscaler.scheduling.pods import PARSE_ERRORS
from autoscaler.scheduling.requirements import Requirements

KubeObject = Mapping[str, Any]
Alternatives = tuple[Requirements, ...]
_DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


class VolumeError(ValueError):
    """The pod's volumes cannot be resolved (missing or deleting claim, lost volume, ...)."""


def _index(objects: Iterable[KubeObject], namespaced: bool) -> dict[tuple[str, str], KubeObject]:
    index = {}
    for obj in objects:
        metadata = obj.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "default") if namespaced else ""
        index[(namespace, str(metadata.get("name") or ""))] = obj
    return index


class VolumeTopology:
    def __init__(
        self,
        claims: Iterable[KubeObject] = (),
        volumes: Iterable[KubeObject] = (),
        storage_classes: Iterable[KubeObject] | None = None,
    ) -> None:
        self._claims = _index(claims, namespaced=True)
        self._volumes = _index(volumes, namespaced=False)
        self._classes = None if storage_classes is None else _index(storage_classes, namespaced=False)
        self._default_class = None if self._classes is None else _default_class(self._classes.values())

    def requirements(self, pod: KubeObject) -> Alternatives:
        """The pod's volume requirement alternatives (empty: unconstrained). Raises VolumeError."""
        metadata = pod.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "default")
        alternatives: list[Requirements] | None = None
        for volume in (pod.get("spec") or {}).get("volumes") or ():
            try:
                options = self._volume_alternatives(namespace, str(metadata.get("name") or ""), volume)
            except PARSE_ERRORS as error:
                raise VolumeError(f"volume {volume.get('name')!r} cannot be read: {error}") from error
            if options:
                alternatives = options if alternatives is None else _cross(alternatives, options)
        return tuple(alternatives or ())

    def _volume_alternatives(self, namespace: str, pod_name: str, volume: KubeObject) -> list[Requirements]:
        if volume.get("persistentVolumeClaim"):
            name = str(volume["persistentVolumeClaim"]["claimName"])
            template = None
        elif volume.get("ephemeral"):
            name = f"{pod_name}-{volume.get('name')}"
            template = ((volume["ephemeral"].get("volumeClaimTemplate") or {}).get("spec")) or {}
        else:
            return []
        claim = self._claims.get((namespace, name))
        if claim is None:
            if template is not None:  # an ephemeral claim not created yet: its template decides
                return self._class_alternatives(template.get("storageClassName"), f"ephemeral volume {name}")
            raise VolumeError(f"persistentvolumeclaim {namespace}/{name} not found")
        if (claim.get("metadata") or {}).get("deletionTimestamp"):
            raise VolumeError(f"persistentvolumeclaim {namespace}/{name} is being deleted")
        if (claim.get("status") or {}).get("phase") == "Lost":
            raise VolumeError(f"persistentvolumeclaim {namespace}/{name} lost its persistentvolume")
        spec = claim.get("spec") or {}
        if spec.get("volumeName"):
            return self._volume_requirements(str(spec["volumeName"]), f"{namespace}/{name}")
        return self._class_alternatives(spec.get("storageClassName"), f"persistentvolumeclaim {namespace}/{name}")

    def _volume_requirements(self, volume_name: str, claim: str) -> list[Requirements]:
        volume = self._volumes.get(("", volume_name))
        if volume is None:
            raise VolumeError(f"persistentvolume {volume_name} of claim {claim} not found")
        spec = volume.get("spec") or {}
        required = (spec.get("nodeAffinity") or {}).get("required") or {}
        local = bool(spec.get("local") or spec.get("hostPath"))
        alternatives = []
        for term in required.get("nodeSelectorTerms") or ():
            expressions = list(term.get("matchExpressions") or ())
            if local:  # a local volume's host is gone with its node: only its zone still matters
                kept = [e for e in expressions if e.get("key") != LABEL_HOSTNAME]
                if expressions and not kept:
                    alternatives.append(Requirements())
                    continue
                expressions = kept
            if expressions:
                alternatives.append(Requirements.from_selector(expressions))
        return alternatives

    def _class_alternatives(self, class_name: object, claim: str) -> list[Requirements]:
        """Where an unbound claim's volume may be provisioned: its StorageClass's ``allowedTopologies`` (OR'd
        terms), whatever the binding mode (Immediate, the default, provisions in one of them too). A claim of no
        class (``""``, or unset with no default class) binds only to an existing volume: it must be bound first."""
        static = VolumeError(f"{claim} is not bound and names no storage class: it waits for a volume to bind to")
        if class_name == "":
            raise static
        if self._classes is None:
            return []
        if class_name is None:
            class_name = self._default_class
            if class_name is None:
                raise static
        storage_class = self._classes.get(("", str(class_name)))
        if storage_class is None:
            raise VolumeError(f"storageclass {class_name} not found")
        alternatives = []
        for term in storage_class.get("allowedTopologies") or ():
            expressions = [
                {"key": e["key"], "operator": "In", "values": e.get("values") or []}
                for e in term.get("matchLabelExpressions") or ()
            ]
            if expressions:
                alternatives.append(Requirements.from_selector(expressions))
        return alternatives


def _default_class(classes: Iterable[KubeObject]) -> str | None:
    """The class a claim naming none gets (the API server's admission): the newest marked default."""
    marked = []
    for storage_class in classes:
        metadata = storage_class.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        if any(annotations.get(a) == "true" for a in _DEFAULT_CLASS_ANNOTATIONS):
            marked.append((str(metadata.get("creationTimestamp") or ""), str(metadata.get("name") or "")))
    newest = max(sorted(marked, key=lambda m: m[1]), key=lambda m: m[0], default=None)  # ties: the first name
    return newest[1] if newest else None


def _cross(left: list[Requirements], right: list[Requirements]) -> list[Requirements]:
    """Every pairing of alternatives; pairings that cannot both hold are dropped unless all are."""
    pairs = [(a, b) for a in left for b in right]
    compatible = [(a, b) for a, b in pairs if a.conflict(b) is None]
    return [a.merged(b) for a, b in compatible or pairs]
