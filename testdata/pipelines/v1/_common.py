"""Helpers shared by the KFP v1 fixture pipelines (kfp 1.8.22).

Short constructors for the kubernetes-client objects that `op.add_toleration` /
`op.add_affinity` take.

Pod labels and annotations are added with plain `op.add_pod_label` / `op.add_pod_annotation`
calls, so expected.yaml holds them where kfp 1.8.22 puts them: the user's keys in call
order, BEFORE kfp's own `pipelines.kubeflow.org/*` keys (added later, at template time),
and `annotations` before `labels` in `metadata` once a template has any annotation
before template time (see testdata/golden/README.md).
"""
from typing import Dict, List, Optional

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
