"""Helpers shared by the KFP v1 fixture pipelines (kfp 1.8.22).

Short constructors for the kubernetes-client objects that `op.add_toleration` /
`op.add_affinity` take, and `pod_metadata_last`, the one place where a source has to be
written in a particular way for the SDK output to match SPEC semantics (see its docstring).
"""
from typing import Dict, List, Optional

from kfp import dsl
from kubernetes.client import (V1Affinity, V1LabelSelector, V1LabelSelectorRequirement,
                               V1NodeAffinity, V1NodeSelector, V1NodeSelectorRequirement,
                               V1NodeSelectorTerm, V1PodAffinity, V1PodAffinityTerm,
                               V1PodAntiAffinity, V1PreferredSchedulingTerm, V1Toleration,
                               V1WeightedPodAffinityTerm)

PY_IMAGE = "python:3.11-slim"


def tol(key=None, operator=None, value=None, effect=None, seconds=None) -> V1Toleration:
    return V1Toleration(key=key, operator=operator, value=value, effect=effect,
                        toleration_seconds=seconds)


def req(key: str, operator: str, values: Optional[List[str]] = None):
    return V1NodeSelectorRequirement(key=key, operator=operator, values=values)


def term(*exprs, fields=None) -> V1NodeSelectorTerm:
    return V1NodeSelectorTerm(match_expressions=list(exprs) or None,
                              match_fields=list(fields) if fields else None)


def node_affinity(required: Optional[List[V1NodeSelectorTerm]] = None,
                  preferred: Optional[List[tuple]] = None) -> V1NodeAffinity:
    """required: ORed terms; preferred: [(weight, term), ...]."""
    return V1NodeAffinity(
        required_during_scheduling_ignored_during_execution=(
            V1NodeSelector(node_selector_terms=required) if required else None),
        preferred_during_scheduling_ignored_during_execution=(
            [V1PreferredSchedulingTerm(weight=w, preference=t) for w, t in preferred]
            if preferred else None))


def affinity(node=None, pod=None, anti=None) -> V1Affinity:
    return V1Affinity(node_affinity=node, pod_affinity=pod, pod_anti_affinity=anti)


def pod_term(topology_key: str, match_labels: Optional[Dict[str, str]] = None,
             match_expressions: Optional[list] = None) -> V1PodAffinityTerm:
    return V1PodAffinityTerm(
        topology_key=topology_key,
        label_selector=V1LabelSelector(
            match_labels=match_labels,
            match_expressions=[V1LabelSelectorRequirement(key=k, operator=o, values=v)
                               for k, o, v in (match_expressions or [])] or None))


def pod_affinity(required=None, preferred=None) -> V1PodAffinity:
    return V1PodAffinity(
        required_during_scheduling_ignored_during_execution=required,
        preferred_during_scheduling_ignored_during_execution=(
            [V1WeightedPodAffinityTerm(weight=w, pod_affinity_term=t) for w, t in preferred]
            if preferred else None))


def pod_anti_affinity(required=None, preferred=None) -> V1PodAntiAffinity:
    return V1PodAntiAffinity(
        required_during_scheduling_ignored_during_execution=required,
        preferred_during_scheduling_ignored_during_execution=(
            [V1WeightedPodAffinityTerm(weight=w, pod_affinity_term=t) for w, t in preferred]
            if preferred else None))


_PLACEHOLDER = "__kfsched_placeholder__"


def pod_metadata_last(select):
    """Registers an op transformer that adds pod labels/annotations AFTER kfp's own keys.

    `select(op)` returns `(labels, annotations)` (dicts, possibly empty) for each op; the
    transformer adds them in that order.

    Why: kfp 1.8.22 adds its own template metadata late. `kfp_sdk_version` and
    `pipeline-sdk-type` come from an op transformer that runs before the user's, but
    `enable_caching` and the annotations `task_display_name`, `component_spec`,
    `component_ref`, `arguments.parameters`, `max_cache_staleness` are added in
    `_op_to_template`, after every user call. A plain `op.add_pod_label(...)` therefore lands
    BEFORE kfp's keys, while SPEC §2 says kfsched appends new keys after a mapping's last
    entry. Pre-seeding kfp's keys (same order; values overwritten by the compiler, and the
    builder checks that no placeholder survives) makes the SDK write the user's keys last,
    i.e. exactly where kfsched puts them. The scheduling content is unchanged.

    Annotations are only allowed on ops that have a display name: without one, kfp writes
    `metadata: {labels, annotations}` in that order, but an annotation set before
    `_op_to_template` makes it `{annotations, labels}`, a reordering kfsched never does.
    """

    def transformer(op):
        adds_labels, adds_annotations = select(op)
        if adds_annotations:
            if not op.display_name:
                raise ValueError(f"{op.name}: pod annotations need a display name (see docstring)")
            pre = {"pipelines.kubeflow.org/task_display_name": op.display_name}
            if isinstance(op, dsl.ContainerOp) and op._metadata and not op.is_v2:
                pre["pipelines.kubeflow.org/component_spec"] = _PLACEHOLDER
            if hasattr(op, "_component_ref"):
                pre["pipelines.kubeflow.org/component_ref"] = _PLACEHOLDER
            if getattr(op, "_parameter_arguments", None):
                pre["pipelines.kubeflow.org/arguments.parameters"] = _PLACEHOLDER
            if (isinstance(op, dsl.ContainerOp) and op.execution_options and
                    op.execution_options.caching_strategy.max_cache_staleness):
                pre["pipelines.kubeflow.org/max_cache_staleness"] = _PLACEHOLDER
            for k, v in pre.items():
                op.add_pod_annotation(k, v)
            for k, v in adds_annotations.items():
                op.add_pod_annotation(k, v)
        if adds_labels:
            op.add_pod_label("pipelines.kubeflow.org/enable_caching",
                             str(op.enable_caching).lower())
            for k, v in adds_labels.items():
                op.add_pod_label(k, v)
        return op

    dsl.get_pipeline_conf().add_op_transformer(transformer)
