"""KFP v2: plain.yaml already has a platform document (the pipeline made its own
kfp.kubernetes calls); the policy merges into it: toleration de-duplication, nodeSelector
value replaced, required terms ANDed into existing ORed terms at their list position,
an already-satisfied requirement, strategy: replace, foreign executor fields and a runtime
tolerationJson kept, a new executor entry between existing ones."""
from kfp import dsl, kubernetes

PY = "python:3.11-slim"


def e(key, operator, *values):
    d = {"key": key, "operator": operator}
    if values:
        d["values"] = list(values)
    return d


ZONE_B = e("topology.kubernetes.io/zone", "In", "us-east1-b")
AMD64, ARM64 = e("kubernetes.io/arch", "In", "amd64"), e("kubernetes.io/arch", "In", "arm64")
SSD = e("example.com/ssd", "Exists")
LINUX = e("kubernetes.io/os", "In", "linux")
PREMIUM = e("example.com/zone-tier", "In", "premium")


@dsl.component(base_image=PY)
def step(variant: str) -> str:
    return variant


def pipeline(scheduled: bool):
    @dsl.pipeline(name="preexisting-config",
                  description="Tasks that already carry kfp-kubernetes config.")
    def preexisting_config(extra_tolerations: list):
        names = ["tol-dedupe-append", "selector-override", "and-into-existing",
                 "already-satisfied", "fresh-entry", "replace-all", "keeps-other-config",
                 "toleration-json", "pod-label-override", "not-selected"]
        t = {n: step(variant=n).set_display_name(f"Variant {n}") for n in names}
        s = scheduled

        # tol-dedupe-append: A exists; the policy adds A (3600 == '3600') and B
        kubernetes.add_toleration(t["tol-dedupe-append"], key="dedicated", operator="Equal",
                                  value="ml", effect="NoExecute", toleration_seconds=3600)
        if s:
            kubernetes.add_toleration(t["tol-dedupe-append"], key="nvidia.com/gpu",
                                      operator="Exists", effect="NoSchedule")

        # selector-override: pool=old -> pool=new (replaced, warned), disk=ssd added
        kubernetes.add_node_selector(t["selector-override"], "pool", "old")
        kubernetes.add_node_selector(t["selector-override"], "topology.kubernetes.io/zone",
                                     "us-east1-b")
        if s:
            kubernetes.add_node_selector(t["selector-override"], "pool", "new")
            kubernetes.add_node_selector(t["selector-override"], "disk", "ssd")

        # and-into-existing: [W1(pref), E1, W3(pref), E2] + required P + preferred W2
        #   -> [W1, E1^P, E2^P, W3, W2]
        x = t["and-into-existing"]
        kubernetes.add_node_affinity(x, match_expressions=[ZONE_B], weight=10)       # W1
        if not s:
            kubernetes.add_node_affinity(x, match_expressions=[AMD64])              # E1
            kubernetes.add_node_affinity(x, match_expressions=[SSD], weight=5)      # W3
            kubernetes.add_node_affinity(x, match_expressions=[ARM64])              # E2
        else:
            kubernetes.add_node_affinity(x, match_expressions=[AMD64, LINUX])       # E1^P
            kubernetes.add_node_affinity(x, match_expressions=[ARM64, LINUX])       # E2^P
            kubernetes.add_node_affinity(x, match_expressions=[SSD], weight=5)      # W3
            kubernetes.add_node_affinity(x, match_expressions=[PREMIUM], weight=40)  # W2

        # already-satisfied: the existing term contains the policy's (values compared
        # sorted), so nothing changes
        kubernetes.add_node_affinity(t["already-satisfied"], match_expressions=[
            e("topology.kubernetes.io/zone", "In", "us-east1-c", "us-east1-b"), AMD64])

        # fresh-entry: no config before; its executor entry lands between existing ones
        if s:
            kubernetes.add_toleration(t["fresh-entry"], key="dedicated", operator="Equal",
                                      value="ml", effect="NoSchedule")

        # replace-all: strategy replace swaps tolerations, nodeSelector and nodeAffinity;
        # podLabels still merge
        r = t["replace-all"]
        if not s:
            kubernetes.add_toleration(r, key="old-a", operator="Exists")
            kubernetes.add_toleration(r, key="old-b", operator="Equal", value="x",
                                      effect="NoSchedule")
            kubernetes.add_node_selector(r, "legacy", "true")
            kubernetes.add_node_affinity(r, match_expressions=[ARM64])
            kubernetes.add_node_affinity(r, match_expressions=[SSD], weight=70)
        else:
            kubernetes.add_toleration(r, key="nvidia.com/gpu", operator="Exists",
                                      effect="NoSchedule")
            kubernetes.add_node_selector(r, "pool", "gpu")
            kubernetes.add_node_affinity(r, match_expressions=[
                e("nvidia.com/gpu.product", "In", "NVIDIA-H100-80GB-HBM3")])
        kubernetes.add_pod_label(r, "team", "vision")
        if s:
            kubernetes.add_pod_label(r, "tier", "gold")

        # keeps-other-config: image pull policy, secret env and timeout stay
        k = t["keeps-other-config"]
        kubernetes.set_image_pull_policy(k, "Always")
        kubernetes.use_secret_as_env(k, secret_name="db-creds",
                                     secret_key_to_env={"password": "DB_PASSWORD"})
        kubernetes.set_timeout(k, 3600)
        if s:
            kubernetes.add_toleration(k, key="dedicated", operator="Equal", value="ml",
                                      effect="NoSchedule")
            kubernetes.add_pod_annotation(k, "example.com/owner", "data-eng@example.com")
            kubernetes.add_node_selector(k, "disk", "ssd")
            kubernetes.add_node_affinity(k, match_expressions=[LINUX])

        # toleration-json: a run-time toleration stays first, the policy's is appended
        kubernetes.add_toleration_json(t["toleration-json"], extra_tolerations)
        if s:
            kubernetes.add_toleration(t["toleration-json"], key="dedicated", operator="Equal",
                                      value="ml", effect="NoSchedule")

        # pod-label-override: cost-center a -> b
        kubernetes.add_pod_label(t["pod-label-override"], "team", "vision")
        kubernetes.add_pod_label(t["pod-label-override"], "cost-center", "a")
        if s:
            kubernetes.add_pod_label(t["pod-label-override"], "cost-center", "b")

        # not-selected: existing config, no rule selects it
        kubernetes.add_toleration(t["not-selected"], key="dedicated", operator="Equal",
                                  value="ml", effect="NoSchedule")

    return preexisting_config


POLICY = """\
# preexisting_config (kfp v2). plain.yaml already has kfp.kubernetes config; the policy
# mirrors the calls that testdata/pipelines/v2/preexisting_config.py adds (or, for
# and-into-existing and replace-all, the calls it makes instead) in the scheduled build.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: preexisting-config
spec:
  rules:
  - name: tol-dedupe-append
    match: {names: ["Variant tol-dedupe-append"]}
    tolerations:
    - {key: dedicated, operator: Equal, value: ml, effect: NoExecute, tolerationSeconds: 3600}
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
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
  - name: fresh-entry
    match: {names: ["Variant fresh-entry"]}
    tolerations:
    - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}
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
  - name: keeps-other-config
    match: {names: ["Variant keeps-other-config"]}
    tolerations:
    - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}
    podAnnotations: {example.com/owner: data-eng@example.com}
    nodeSelector: {disk: ssd}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: kubernetes.io/os, operator: In, values: [linux]}
  - name: toleration-json
    match: {names: ["Variant toleration-json"]}
    tolerations:
    - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}
  - name: pod-label-override
    match: {names: ["Variant pod-label-override"]}
    podLabels: {cost-center: b}
"""

NOTES = """\
# v2 / preexisting_config

plain.yaml already has a platform document: the pipeline makes its own kfp-kubernetes
calls (both builds). One `step` task per situation, display name `Variant <situation>`;
executors `exec-step` … `exec-step-10` in creation order (see the `variant` input).

- tol-dedupe-append: existing `dedicated=ml:NoExecute` `tolerationSeconds: '3600'`; the
  policy's first toleration is the same (3600 equals '3600') and is not added again; the
  second is appended.
- selector-override: existing `pool=old`, `topology.kubernetes.io/zone`; `pool` becomes
  `new` (a warning), `disk=ssd` is added; keys sorted as the SDK writes them.
- and-into-existing: existing list [W1 preferred, E1 `arch In [amd64]`, W3 preferred,
  E2 `arch In [arm64]`]; the rule requires `os In [linux]` (P) and prefers W2. Result:
  [W1, E1∧P, E2∧P, W3, W2]: the combined required terms take the position of the first
  existing required term, the other preferred terms keep theirs, W2 is appended.
- already-satisfied: the existing term `zone In [us-east1-c, us-east1-b]` ∧ `arch` already
  contains the policy's `zone In [us-east1-b, us-east1-c]` (values compared sorted):
  nothing changes, the executor is byte-identical.
- fresh-entry (exec-step-5): no config in plain; its new executor entry goes between
  exec-step-4 and exec-step-6 (sorted, as the SDK writes).
- replace-all (`strategy: replace`): tolerations, nodeSelector and the whole nodeAffinity
  list are replaced (the old preferred term goes too); podLabels merge (`team` stays,
  `tier` added).
- keeps-other-config: `imagePullPolicy`, `secretAsEnv` and `activeDeadlineSeconds` stay;
  toleration, `nodeSelector`, `nodeAffinity` and `podMetadata.annotations` added, each at
  its sorted place among the existing keys.
- toleration-json: the run-time `tolerationJson: {componentInputParameter:
  extra_tolerations}` entry stays first; the policy's toleration is appended.
  doc 0 has the `extra_tolerations` input in both files.
- pod-label-override: `cost-center` a → b (a warning), `team` stays.
- not-selected: has config, no rule selects it: unchanged.
"""

VARIANTS = ("crlf", "bom")
