"""KFP v1: templates that already carry scheduling in plain.yaml (the pipeline made its
own calls); the policy merges into them: toleration append + de-duplication, nodeSelector
value replaced in place, required terms ANDed into existing ORed terms, an
already-satisfied requirement, a preferred term added next to an existing required one,
pod affinity appended, strategy: replace, a pod label value replaced."""
from kfp import dsl
from kfp.components import create_component_from_func

from _common import (PY_IMAGE, affinity, node_affinity, pod_affinity, pod_anti_affinity,
                     pod_term, req, term, tol)

ZONE_B = req("topology.kubernetes.io/zone", "In", ["us-east1-b"])
AMD64, ARM64 = req("kubernetes.io/arch", "In", ["amd64"]), req("kubernetes.io/arch", "In", ["arm64"])
SSD = req("example.com/ssd", "Exists")
LINUX = req("kubernetes.io/os", "In", ["linux"])
PREMIUM = req("example.com/zone-tier", "In", ["premium"])
CACHE = pod_term("kubernetes.io/hostname", match_labels={"app": "cache"})
DB = pod_term("kubernetes.io/hostname", match_labels={"app": "db"})
SPREAD = pod_term("topology.kubernetes.io/zone",
                  match_expressions=[("workflows.argoproj.io/workflow", "Exists", None)])


def step(variant: str) -> str:
    return variant


step_op = create_component_from_func(step, base_image=PY_IMAGE)


def pipeline(scheduled: bool):
    s = scheduled

    @dsl.pipeline(name="preexisting-config",
                  description="Templates that already carry scheduling fields.")
    def preexisting_config():
        names = ["tol-append", "selector-override", "and-into-existing", "already-satisfied",
                 "preferred-next-to-required", "pod-affinity-append", "replace-all",
                 "label-override", "not-selected"]
        o = {n: step_op(n).set_display_name(f"Variant {n}") for n in names}

        # tol-append: [A, B] + policy [A, C] -> [A, B, C]
        o["tol-append"].add_toleration(tol("dedicated", "Equal", "ml", "NoExecute", 3600))
        o["tol-append"].add_toleration(tol("nvidia.com/gpu", "Exists", effect="NoSchedule"))
        if s:
            o["tol-append"].add_toleration(tol("example.com/spot", "Exists",
                                               effect="PreferNoSchedule"))

        # selector-override: pool old -> new in place, disk appended
        o["selector-override"].add_node_selector_constraint("pool", "old")
        o["selector-override"].add_node_selector_constraint("topology.kubernetes.io/zone",
                                                            "us-east1-b")
        if s:
            o["selector-override"].add_node_selector_constraint("pool", "new")
            o["selector-override"].add_node_selector_constraint("disk", "ssd")

        # and-into-existing: required [E1, E2], preferred [W1] + required P, preferred W2
        if not s:
            o["and-into-existing"].add_affinity(affinity(node_affinity(
                [term(AMD64), term(ARM64)], [(10, term(ZONE_B))])))
        else:
            o["and-into-existing"].add_affinity(affinity(node_affinity(
                [term(AMD64, LINUX), term(ARM64, LINUX)],
                [(10, term(ZONE_B)), (40, term(PREMIUM))])))

        # already-satisfied: existing term contains the policy's (values compared sorted)
        o["already-satisfied"].add_affinity(affinity(node_affinity([term(
            req("topology.kubernetes.io/zone", "In", ["us-east1-c", "us-east1-b"]), AMD64)])))

        # preferred-next-to-required: existing required only; a preferred term is added.
        # kfp writes preferred... before required... (kubernetes-client key order).
        if not s:
            o["preferred-next-to-required"].add_affinity(affinity(node_affinity([term(AMD64)])))
        else:
            o["preferred-next-to-required"].add_affinity(affinity(node_affinity(
                [term(AMD64)], [(25, term(SSD))])))

        # pod-affinity-append: podAffinity [CACHE] + policy [CACHE, DB], podAntiAffinity new
        if not s:
            o["pod-affinity-append"].add_affinity(affinity(pod=pod_affinity(required=[CACHE])))
        else:
            o["pod-affinity-append"].add_affinity(affinity(
                pod=pod_affinity(required=[CACHE, DB]),
                anti=pod_anti_affinity(preferred=[(10, SPREAD)])))

        # replace-all: strategy replace swaps tolerations, nodeSelector and affinity
        r = o["replace-all"]
        if not s:
            r.add_toleration(tol("old-a", "Exists"))
            r.add_toleration(tol("old-b", "Equal", "x", "NoSchedule"))
            r.add_node_selector_constraint("legacy", "yes")
            r.add_affinity(affinity(node_affinity([term(ARM64)], [(70, term(SSD))]),
                                    anti=pod_anti_affinity(required=[SPREAD])))
        else:
            r.add_toleration(tol("nvidia.com/gpu", "Exists", effect="NoSchedule"))
            r.add_node_selector_constraint("pool", "gpu")
            r.add_affinity(affinity(node_affinity([term(
                req("nvidia.com/gpu.product", "In", ["NVIDIA-H100-80GB-HBM3"]))])))

        # label-override: a user label (before kfp's labels in both builds); the policy
        # changes its value in place and adds a second one after it
        o["label-override"].add_pod_label("team", "nlp" if s else "vision")
        if s:
            o["label-override"].add_pod_label("cost-center", "cc-42")

        # not-selected: has config, no rule selects it
        o["not-selected"].add_toleration(tol("dedicated", "Equal", "ml", "NoSchedule"))
        o["not-selected"].add_node_selector_constraint("pool", "old")

        if s:
            # replace-all also adds a pod label (labels always merge)
            r.add_pod_label("tier", "gold")

    return preexisting_config


POLICY = """\
# preexisting_config (kfp v1). plain.yaml already has template scheduling; the policy
# mirrors what testdata/pipelines/v1/preexisting_config.py adds in the scheduled build
# (op.add_toleration, add_node_selector_constraint, add_pod_label) or, for add_affinity,
# which replaces, the merged V1Affinity it passes instead.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: preexisting-config
spec:
  rules:
  - name: tol-append
    match: {names: ["Variant tol-append"]}
    tolerations:
    - {key: dedicated, operator: Equal, value: ml, effect: NoExecute, tolerationSeconds: 3600}
    - {key: example.com/spot, operator: Exists, effect: PreferNoSchedule}
  - name: selector-override
    match: {names: ["Variant selector-override"]}
    nodeSelector: {pool: new, disk: ssd}
  - name: and-into-existing
    match: {names: ["Variant and-into-existing"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: kubernetes.io/os, operator: In, values: [linux]}
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 40
          preference:
            matchExpressions:
            - {key: example.com/zone-tier, operator: In, values: [premium]}
  - name: already-satisfied
    match: {names: ["Variant already-satisfied"]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b, us-east1-c]}
  - name: preferred-next-to-required
    match: {names: ["Variant preferred-next-to-required"]}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 25
          preference:
            matchExpressions:
            - {key: example.com/ssd, operator: Exists}
  - name: pod-affinity-append
    match: {names: ["Variant pod-affinity-append"]}
    affinity:
      podAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchLabels: {app: cache}
          topologyKey: kubernetes.io/hostname
        - labelSelector:
            matchLabels: {app: db}
          topologyKey: kubernetes.io/hostname
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 10
          podAffinityTerm:
            labelSelector:
              matchExpressions:
              - {key: workflows.argoproj.io/workflow, operator: Exists}
            topologyKey: topology.kubernetes.io/zone
  - name: replace-all
    match: {names: ["Variant replace-all"]}
    strategy: replace
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
    nodeSelector: {pool: gpu}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}
    podLabels: {tier: gold}
  - name: label-override
    match: {names: ["Variant label-override"]}
    podLabels: {team: nlp, cost-center: cc-42}
"""

NOTES = """\
# v1 / preexisting_config

plain.yaml already has template-level scheduling (the pipeline's own calls, in both
builds). One `step` template per situation (`step` … `step-9`), display name
`Variant <situation>`.

- tol-append (step): existing [A `dedicated=ml:NoExecute` 3600, B]; policy [A, C]: A is
  already there, C is appended → [A, B, C].
- selector-override (step-2): `pool: old` → `new` in place (a warning), `disk: ssd`
  appended after the existing keys.
- and-into-existing (step-3): required [E1 `arch In [amd64]`, E2 `arch In [arm64]`],
  preferred [W1]; the rule requires `os In [linux]` and prefers W2 → required
  [E1∧P, E2∧P], preferred [W1, W2].
- already-satisfied (step-4): the existing term `zone In [us-east1-c, us-east1-b]` ∧ arch
  contains the policy's `zone In [us-east1-b, us-east1-c]` (values compared sorted):
  unchanged.
- preferred-next-to-required (step-5): a preferred term is added to a nodeAffinity that
  has only `requiredDuringScheduling…`. kfp writes `preferredDuringScheduling…` BEFORE
  `required…` (kubernetes-client order), so expected.yaml inserts the new key before the
  existing one, not after it: for SDK files the SDK's order wins (SPEC §2).
- pod-affinity-append (step-6): podAffinity [cache] + policy [cache, db] → [cache, db];
  podAntiAffinity is new and goes after podAffinity.
- replace-all (step-7, `strategy: replace`): tolerations, nodeSelector and the whole
  `affinity` (its podAntiAffinity too) are replaced; the pod label `tier` is added
  (labels always merge) as the first label, before kfp's `pipelines.kubeflow.org/*`
  labels.
- label-override (step-8): plain.yaml already has a user label `team: vision` before kfp's
  labels: its value becomes `nlp` in place, and `cost-center` goes right after it, still
  before kfp's labels (kfp keeps the user's keys in call order, its own after them).
- not-selected (step-9): unchanged.

Source note: `op.add_affinity` replaces the whole affinity, so the scheduled source passes
the merged value instead of a second call.
"""
