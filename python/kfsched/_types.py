"""The shapes of the binary's JSON reports (``explain -o json``, ``check -o
json``), as :class:`typing.TypedDict`: the dictionaries the API returns are the
binary's JSON, unchanged, and these say what they hold."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict

#: Scheduling fields as Kubernetes spells them (``tolerations``,
#: ``nodeSelector``, ``affinity``, ...), or the executor's fields in a KFP v2
#: platform spec.
Scheduling = Dict[str, Any]


class RuleVerdict(TypedDict):
    rule: str
    matched: bool
    #: For a rule that did not match, the first selector that failed.
    reason: Optional[str]


class ExplainedComponent(TypedDict):
    component: str
    kind: str
    pipeline: Optional[str]
    pipelines: List[str]
    #: ``executor``, ``driver`` or ``importer``: a file's component is an
    #: executor; a pipeline's pod says its own (``None`` when it says none).
    role: Optional[str]
    #: The task path (a KFP v2 task's, or a pipeline pod's as admission reads it).
    taskPath: Optional[str]
    names: List[str]
    images: List[str]
    rules: List[RuleVerdict]
    before: Scheduling
    after: Scheduling
    changed: bool
    warnings: List[str]


class SkippedComponent(TypedDict):
    component: str
    reason: str


class ExplainedDocument(TypedDict):
    #: The document's number in its file, from 1.
    document: int
    format: Optional[str]
    skippedBecause: Optional[str]
    components: List[ExplainedComponent]
    skipped: List[SkippedComponent]


class ExplainedFile(TypedDict):
    file: str
    changed: bool
    documents: List[ExplainedDocument]
    warnings: List[str]


class ExplainReport(TypedDict):
    """``kubectl kfsched explain -o json``."""

    policy: str
    files: List[ExplainedFile]
    unmatchedRules: List[str]


class PoolLanding(TypedDict):
    rule: str
    pool: str
    fits: bool


class CheckedComponent(TypedDict):
    file: str
    document: int
    component: str
    label: str
    kind: str
    pipelines: List[str]
    names: List[str]
    #: Whether it passes the check: it fits a node (with ``--pools``, every
    #: pool its rules name), or another scheduler places it. The command
    #: exits 1 when one component is not ok.
    ok: bool
    #: The nodes the component can be scheduled on; empty when it fits none.
    nodes: List[str]
    preferred: List[str]
    preferredScore: int
    #: kube-scheduler's own ``0/N nodes are available: ...`` when it fits none.
    message: Optional[str]
    #: How many nodes each filter rejected, by its reason.
    rejected: Dict[str, int]
    requests: Dict[str, str]
    pools: List[PoolLanding]
    warnings: List[str]
    #: False when the pod names another scheduler: kube-scheduler would not
    #: place it, so it is not judged (and does not fail the check).
    judged: bool
    #: Why the API server would refuse the pod (a PriorityClass the cluster
    #: lacks), or None.
    refused: Optional[str]
    notJudged: List[str]
    pod: Dict[str, Any]


class CheckedNodes(TypedDict):
    source: Dict[str, str]
    count: int
    resourcesJudged: bool
    usageCounted: bool


class CheckReport(TypedDict):
    """``kubectl kfsched check -o json``."""

    components: List[CheckedComponent]
    nodes: CheckedNodes
    warnings: List[str]
