"""KFP v1: every node-affinity operator, matchFields, required and preferred terms, ORed
terms, ANDing across rules (1x1 and 2x2), pod affinity and anti-affinity, node and pod
affinity from different rules, and the `pool` shorthand. kfp v1's add_affinity REPLACES
the whole affinity, so each template gets ONE add_affinity call holding what SPEC merge
of all its rules gives."""
from kfp import dsl
from kfp.components import create_component_from_func

from _common import (PY_IMAGE, affinity, node_affinity, pod_affinity, pod_anti_affinity,
                     pod_term, req, term, tol)

ZONE_B = ("topology.kubernetes.io/zone", "In", ["us-east1-b"])
ZONE_C = ("topology.kubernetes.io/zone", "In", ["us-east1-c"])
AMD64 = ("kubernetes.io/arch", "In", ["amd64"])
ARM64 = ("kubernetes.io/arch", "In", ["arm64"])
SSD = ("example.com/ssd", "Exists", None)


def t(*exprs, fields=None):
    return term(*[req(*x) for x in exprs], fields=[req(*x) for x in fields] if fields else None)


CACHE_AFFINITY = pod_term("kubernetes.io/hostname", match_labels={"app": "cache"})
SPREAD = pod_term("topology.kubernetes.io/zone",
                  match_expressions=[("workflows.argoproj.io/workflow", "Exists", None)])

# variant -> the V1Affinity that SPEC merge of the variant's rules gives
AFFINITY = {
    "op-in": affinity(node_affinity([t(("example.com/env", "In", ["experiment", "staging"]))])),
    "op-notin": affinity(node_affinity([t(("example.com/env", "NotIn", ["production"]))])),
    "op-exists": affinity(node_affinity([t(("example.com/fast-disk", "Exists", None))])),
    "op-doesnotexist": affinity(node_affinity([t(("example.com/preemptible", "DoesNotExist",
                                                  None))])),
    "op-gt": affinity(node_affinity([t(("example.com/cpu-generation", "Gt", ["3"]))])),
    "op-lt": affinity(node_affinity([t(("example.com/numa-nodes", "Lt", ["4"]))])),
    "match-fields": affinity(node_affinity([t(fields=[("metadata.name", "In", ["node-a"])])])),
    "fields-and-expressions": affinity(node_affinity([t(
        ("kubernetes.io/os", "In", ["linux"]), fields=[("metadata.name", "NotIn", ["node-b"])])])),
    "or-terms": affinity(node_affinity([t(ZONE_B), t(ZONE_C, AMD64)])),
    "preferred-weights": affinity(node_affinity(preferred=[(1, t(ZONE_B)),
                                                           (100, t(SSD, ZONE_C))])),
    "required-and-preferred": affinity(node_affinity(
        [t(("kubernetes.io/os", "In", ["linux"]))],
        [(50, t(("example.com/zone-tier", "In", ["premium"])))])),
    "and-rules": affinity(node_affinity([t(ZONE_B, SSD)])),
    "m-by-k": affinity(node_affinity([t(ZONE_B, AMD64), t(ZONE_B, ARM64), t(ZONE_C, AMD64),
                                      t(ZONE_C, ARM64)])),
    "pod-affinity": affinity(pod=pod_affinity(required=[CACHE_AFFINITY]),
                             anti=pod_anti_affinity(preferred=[(10, SPREAD)])),
    "node-and-pod-rules": affinity(node_affinity([t(AMD64)]),
                                   anti=pod_anti_affinity(required=[SPREAD])),
    "pod-affinity-dedupe": affinity(pod=pod_affinity(preferred=[(40, CACHE_AFFINITY)])),
    "pool-and-own-term": affinity(node_affinity([t(("kfsched.dev/pool", "In", ["gpu-a100"]),
                                                   ("nvidia.com/gpu.memory", "Gt", ["40000"]))])),
}


def step(variant: str) -> str:
    return variant


step_op = create_component_from_func(step, base_image=PY_IMAGE)


def pipeline(scheduled: bool):
    @dsl.pipeline(name="affinity-matrix", description="One template per affinity shape.")
    def affinity_matrix():
        ops = {v: step_op(v).set_display_name(f"Variant {v}") for v in AFFINITY}
        if not scheduled:
            return
        for variant, aff in AFFINITY.items():
            op = ops[variant]
            if variant == "pool-and-own-term":
                op.add_toleration(tol("kfsched.dev/pool", "Equal", "gpu-a100", "NoSchedule"))
                op.add_toleration(tol("nvidia.com/gpu", "Exists", effect="NoSchedule"))
            op.add_affinity(aff)

    return affinity_matrix


POLICY = """\
# affinity_matrix (kfp v1). Mirrors the op.add_affinity(V1Affinity(...)) calls (and, for
# the pool rule, op.add_toleration) in testdata/pipelines/v1/affinity_matrix.py, one
# template per variant, selected by display name "Variant <variant>". kfp v1 add_affinity
# replaces, so the source builds, per template, the one V1Affinity that SPEC merge of its
# rules gives.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: affinity-matrix
spec:
  nodePools:
  - name: gpu-a100
    nodes: ["gpu-a100-*"]
    labels: {kfsched.dev/pool: gpu-a100}
    taints:
    - {key: kfsched.dev/pool, value: gpu-a100, effect: NoSchedule}
    - {key: nvidia.com/gpu, effect: NoSchedule}
  rules:
  - name: op-in
    match: {names: ["Variant op-in"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: example.com/env, operator: In, values: [experiment, staging]}
  - name: op-notin
    match: {names: ["Variant op-notin"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: example.com/env, operator: NotIn, values: [production]}
  - name: op-exists
    match: {names: ["Variant op-exists"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: example.com/fast-disk, operator: Exists}
  - name: op-doesnotexist
    match: {names: ["Variant op-doesnotexist"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: example.com/preemptible, operator: DoesNotExist}
  - name: op-gt
    match: {names: ["Variant op-gt"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: example.com/cpu-generation, operator: Gt, values: ["3"]}
  - name: op-lt
    match: {names: ["Variant op-lt"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: example.com/numa-nodes, operator: Lt, values: ["4"]}
  - name: match-fields
    match: {names: ["Variant match-fields"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchFields:
            - {key: metadata.name, operator: In, values: [node-a]}
  - name: fields-and-expressions
    match: {names: ["Variant fields-and-expressions"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: kubernetes.io/os, operator: In, values: [linux]}
            matchFields:
            - {key: metadata.name, operator: NotIn, values: [node-b]}
  - name: or-terms
    match: {names: ["Variant or-terms"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b]}
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-c]}
            - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  - name: preferred-weights
    match: {names: ["Variant preferred-weights"]}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 1
          preference:
            matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b]}
        - weight: 100
          preference:
            matchExpressions:
            - {key: example.com/ssd, operator: Exists}
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-c]}
  - name: required-and-preferred
    match: {names: ["Variant required-and-preferred"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: kubernetes.io/os, operator: In, values: [linux]}
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 50
          preference:
            matchExpressions:
            - {key: example.com/zone-tier, operator: In, values: [premium]}
  - name: and-rules-zone
    match: {names: ["Variant and-rules"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b]}
  - name: and-rules-ssd
    match: {names: ["Variant and-rules"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: example.com/ssd, operator: Exists}
  - name: m-by-k-zones
    match: {names: ["Variant m-by-k"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b]}
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-c]}
  - name: m-by-k-arches
    match: {names: ["Variant m-by-k"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: kubernetes.io/arch, operator: In, values: [amd64]}
          - matchExpressions:
            - {key: kubernetes.io/arch, operator: In, values: [arm64]}
  - name: pod-affinity
    match: {names: ["Variant pod-affinity"]}
    affinity:
      podAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchLabels: {app: cache}
          topologyKey: kubernetes.io/hostname
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 10
          podAffinityTerm:
            labelSelector:
              matchExpressions:
              - {key: workflows.argoproj.io/workflow, operator: Exists}
            topologyKey: topology.kubernetes.io/zone
  - name: node-part
    match: {names: ["Variant node-and-pod-rules"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  - name: pod-part
    match: {names: ["Variant node-and-pod-rules"]}
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchExpressions:
            - {key: workflows.argoproj.io/workflow, operator: Exists}
          topologyKey: topology.kubernetes.io/zone
  - name: pod-dedupe-1
    match: {names: ["Variant pod-affinity-dedupe"]}
    affinity:
      podAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 40
          podAffinityTerm:
            labelSelector:
              matchLabels: {app: cache}
            topologyKey: kubernetes.io/hostname
  - name: pod-dedupe-2
    match: {names: ["Variant pod-affinity-dedupe"]}
    affinity:
      podAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 40
          podAffinityTerm:
            labelSelector:
              matchLabels: {app: cache}
            topologyKey: kubernetes.io/hostname
  - name: pool-and-own-term
    match: {names: ["Variant pool-and-own-term"]}
    pool: gpu-a100
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: nvidia.com/gpu.memory, operator: Gt, values: ["40000"]}
"""

NOTES = """\
# v1 / affinity_matrix

One `step` template per affinity shape, display name `Variant <shape>`, all new
`affinity:` fields (after `outputs`, before `metadata`). kfp v1 writes kubernetes-client
key order (`nodeAffinity, podAffinity, podAntiAffinity`; `preferred…` before
`required…`; `preference, weight`; `key, operator, values`), a requirement with `values`
as a block map with flow `values: […]`, one without (`Exists`) as a flow map.

- op-in, op-notin, op-exists, op-doesnotexist, op-gt (`Gt ['3']`), op-lt (`Lt ['4']`),
  match-fields (`metadata.name In [node-a]`), fields-and-expressions: one required term.
- or-terms: two ORed terms from one rule; preferred-weights: weights 1 and 100;
  required-and-preferred: both in one rule.
- and-rules: two rules with one term each → ONE term with both expressions (ANDed).
- m-by-k: `zone b OR zone c` then `amd64 OR arm64` → four terms in E-major order.
- pod-affinity: a required podAffinity term and a preferred podAntiAffinity term.
- node-and-pod-rules: nodeAffinity from one rule, podAntiAffinity from the next: one
  `affinity` with both.
- pod-affinity-dedupe: the same preferred podAffinity term from two rules, written once.
- pool-and-own-term (`pool: gpu-a100`): the pool's two taints become tolerations
  (Equal with the value; Exists for the taint without a value) and its label becomes an
  In expression ANDed (first) with the rule's own `nvidia.com/gpu.memory Gt ['40000']`.

Source note: `op.add_affinity` replaces the whole affinity (SPEC `strategy: replace`
semantics), so a template selected by several rules gets one call with the merged value.
"""
