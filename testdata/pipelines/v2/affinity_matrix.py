"""KFP v2: every node-affinity operator, matchFields, required and preferred terms, ORed
terms in one rule, ANDing across rules (1x1 and 2x2), rule order, and the `pool` shorthand."""
from kfp import dsl, kubernetes

PY = "python:3.11-slim"


def e(key, operator, *values):
    d = {"key": key, "operator": operator}
    if values:
        d["values"] = list(values)
    return d


ZONE_A, ZONE_B = e("topology.kubernetes.io/zone", "In", "us-east1-b"), \
    e("topology.kubernetes.io/zone", "In", "us-east1-c")
AMD64, ARM64 = e("kubernetes.io/arch", "In", "amd64"), e("kubernetes.io/arch", "In", "arm64")

# (variant, [(match_expressions, match_fields, weight), ...]) in SDK call order
SINGLE = [
    ("op-in", [([e("example.com/env", "In", "experiment", "staging")], None, None)]),
    ("op-notin", [([e("example.com/env", "NotIn", "production")], None, None)]),
    ("op-exists", [([e("example.com/fast-disk", "Exists")], None, None)]),
    ("op-doesnotexist", [([e("example.com/preemptible", "DoesNotExist")], None, None)]),
    ("op-gt", [([e("example.com/cpu-generation", "Gt", "3")], None, None)]),
    ("op-lt", [([e("example.com/numa-nodes", "Lt", "4")], None, None)]),
    ("match-fields", [(None, [e("metadata.name", "In", "node-a")], None)]),
    ("fields-and-expressions", [([e("kubernetes.io/os", "In", "linux")],
                                 [e("metadata.name", "NotIn", "node-b")], None)]),
    ("or-terms", [([ZONE_A], None, None), ([ZONE_B, AMD64], None, None)]),
    ("preferred-weights", [([ZONE_A], None, 1),
                           ([e("example.com/ssd", "Exists"), ZONE_B], None, 100)]),
    ("required-and-preferred", [([e("kubernetes.io/os", "In", "linux")], None, None),
                                ([e("example.com/zone-tier", "In", "premium")], None, 50)]),
    # two rules, one required term each: ANDed into ONE term
    ("and-rules", [([ZONE_A, e("example.com/ssd", "Exists")], None, None)]),
    # rule A: zone-a OR zone-b; rule B: amd64 OR arm64 -> E-major products
    ("m-by-k", [([ZONE_A, AMD64], None, None), ([ZONE_A, ARM64], None, None),
                ([ZONE_B, AMD64], None, None), ([ZONE_B, ARM64], None, None)]),
    # rule 1 preferred, rule 2 required: the required term is appended after it
    ("preferred-then-required", [([ZONE_A], None, 10), ([AMD64], None, None)]),
    # the same preferred term from two rules: written once
    ("preferred-dedupe", [([ZONE_B], None, 30)]),
    # pool gpu-a100 (taints -> tolerations, labels -> one term) ANDed with the rule's own term
    ("pool-and-own-term", [([e("kfsched.dev/pool", "In", "gpu-a100"),
                             e("nvidia.com/gpu.memory", "Gt", "40000")], None, None)]),
    # pool with two labels and no own affinity: one term, one In expression per label
    ("pool-two-labels", [([e("example.com/cpu", "In", "sapphire-rapids"),
                           e("kfsched.dev/pool", "In", "cpu-highmem")], None, None)]),
]


@dsl.component(base_image=PY)
def step(variant: str) -> str:
    return variant


def pipeline(scheduled: bool):
    @dsl.pipeline(name="affinity-matrix", description="One task per node-affinity shape.")
    def affinity_matrix():
        tasks = {v: step(variant=v).set_display_name(f"Variant {v}") for v, _ in SINGLE}
        if not scheduled:
            return
        for variant, terms in SINGLE:
            t = tasks[variant]
            if variant == "pool-and-own-term":
                kubernetes.add_toleration(t, key="kfsched.dev/pool", operator="Equal",
                                          value="gpu-a100", effect="NoSchedule")
                kubernetes.add_toleration(t, key="nvidia.com/gpu", operator="Exists",
                                          effect="NoSchedule")
                kubernetes.add_toleration(t, key="example.com/large-memory", operator="Exists",
                                          effect="PreferNoSchedule")
            if variant == "pool-two-labels":
                kubernetes.add_toleration(t, key="kfsched.dev/pool", operator="Equal",
                                          value="cpu-highmem", effect="NoSchedule")
            for match_expressions, match_fields, weight in terms:
                kubernetes.add_node_affinity(t, match_expressions=match_expressions,
                                             match_fields=match_fields, weight=weight)

    return affinity_matrix


POLICY = """\
# affinity_matrix (kfp v2). Mirrors the kfp.kubernetes.add_node_affinity (and, for the
# pool rules, add_toleration) calls in testdata/pipelines/v2/affinity_matrix.py, one task
# per variant, selected by display name "Variant <variant>". Where several rules select a
# task, the source makes the calls that SPEC §3 merge implies (required terms ANDed into
# one term, E-major products, preferred appended once).
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
    - {key: nvidia.com/gpu, effect: NoSchedule}          # no value: tolerated with Exists
  - name: cpu-highmem
    nodes: ["highmem-*"]
    labels: {example.com/cpu: sapphire-rapids, kfsched.dev/pool: cpu-highmem}
    taints:
    - {key: kfsched.dev/pool, value: cpu-highmem, effect: NoSchedule}
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
          nodeSelectorTerms:            # two terms: ORed, written as two list entries
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
        # preferred listed first on purpose: within a rule, required terms come first
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 50
          preference:
            matchExpressions:
            - {key: example.com/zone-tier, operator: In, values: [premium]}
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: kubernetes.io/os, operator: In, values: [linux]}
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
  - name: preferred-first
    match: {names: ["Variant preferred-then-required"]}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 10
          preference:
            matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b]}
  - name: required-second
    match: {names: ["Variant preferred-then-required"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  - name: preferred-dedupe-1
    match: {names: ["Variant preferred-dedupe"]}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 30
          preference:
            matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-c]}
  - name: preferred-dedupe-2
    match: {names: ["Variant preferred-dedupe"]}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 30
          preference:
            matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-c]}
  - name: pool-and-own-term
    match: {names: ["Variant pool-and-own-term"]}
    pool: gpu-a100
    tolerations:
    - {key: example.com/large-memory, operator: Exists, effect: PreferNoSchedule}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: nvidia.com/gpu.memory, operator: Gt, values: ["40000"]}
  - name: pool-two-labels
    match: {names: ["Variant pool-two-labels"]}
    pool: cpu-highmem
"""

NOTES = """\
# v2 / affinity_matrix

One `step` task per shape, display name `Variant <shape>`. In the v2 platform document
`nodeAffinity` is a list of terms: a term without `weight` is required, one with `weight`
(a float: `weight: 100.0`) is preferred; `values` is absent for Exists / DoesNotExist.

- op-in, op-notin, op-exists, op-doesnotexist, op-gt (`Gt ['3']`), op-lt (`Lt ['4']`):
  one required term each.
- match-fields: `matchFields metadata.name In [node-a]` (exactly one value);
  fields-and-expressions: one term with both `matchExpressions` and `matchFields`.
- or-terms: one rule with two `nodeSelectorTerms` → two required entries (ORed).
- preferred-weights: weights 1 and 100, the second with two expressions.
- required-and-preferred: one rule; the required entry comes first although the policy
  lists `preferred…` first (SPEC §3: within one rule, required terms before preferred).
- and-rules: two rules with one required term each → ONE entry with both expressions
  (the requirement is ANDed, never appended as an OR term).
- m-by-k: rules `zone b OR zone c` then `amd64 OR arm64` → four entries in E-major order:
  b∧amd64, b∧arm64, c∧amd64, c∧arm64.
- preferred-then-required: the preferred entry (first rule) stays first; the required one
  (no existing required term) is appended after it.
- preferred-dedupe: the same preferred term from two rules is written once.
- pool-and-own-term (`pool: gpu-a100`): the pool's taints become tolerations first
  (`kfsched.dev/pool=gpu-a100` Equal, `nvidia.com/gpu` Exists since that taint has no value),
  then the rule's own toleration; the pool's label term is ANDed with the rule's own
  required term: one entry `kfsched.dev/pool In [gpu-a100]` + `nvidia.com/gpu.memory Gt
  ['40000']`, pool expression first.
- pool-two-labels (`pool: cpu-highmem`, two labels): one toleration and one entry with an
  In expression per label. The labels are in alphabetical order in the policy, so file
  order and sorted order give the same expression order.
"""
