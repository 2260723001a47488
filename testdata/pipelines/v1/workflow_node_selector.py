"""KFP v1: a workflow-level nodeSelector (PipelineConf.set_default_pod_node_selector).
Argo replaces, it does not merge: a template nodeSelector replaces the workflow's for
that pod. SPEC §2: kfsched seeds a template nodeSelector it creates from the workflow's,
and writes nothing when the workflow's already satisfies the rule. The SDK would write
the template value alone, so the scheduled source adds the workflow keys first (the
"corrected source"; see NOTES)."""
from kfp import dsl
from kfp.components import create_component_from_func

from _common import PY_IMAGE, tol

WORKFLOW_SELECTOR = [("kubernetes.io/os", "linux"), ("node-role.example.com/pipelines", "true")]


def prepare(rows: int) -> int:
    return rows


def train(rows: int) -> float:
    return rows / 1000


def validate(score: float) -> bool:
    return score > 0.5


prepare_op = create_component_from_func(prepare, base_image=PY_IMAGE)
train_op = create_component_from_func(train, base_image=PY_IMAGE)
validate_op = create_component_from_func(validate, base_image=PY_IMAGE)


def pipeline(scheduled: bool):
    @dsl.pipeline(name="workflow-node-selector",
                  description="Workflow-level nodeSelector plus template-level rules.")
    def workflow_node_selector(rows: int = 1000):
        conf = dsl.get_pipeline_conf()
        for k, v in WORKFLOW_SELECTOR:
            conf.set_default_pod_node_selector(k, v)
        p = prepare_op(rows)
        t = train_op(p.output)
        v = validate_op(t.output)
        # validate already has its own template nodeSelector in plain.yaml
        v.add_node_selector_constraint("kubernetes.io/arch", "amd64")
        if not scheduled:
            return
        # rule gpu-pool on train: the template has no nodeSelector, the workflow has one:
        # the template value starts from the workflow's (same order), then the rule's key.
        # A naive source would call only add_node_selector_constraint("pool", "gpu"),
        # which under Argo drops kubernetes.io/os and node-role for this pod.
        for k, val in WORKFLOW_SELECTOR:
            t.add_node_selector_constraint(k, val)
        t.add_node_selector_constraint("pool", "gpu")
        t.add_toleration(tol("nvidia.com/gpu", "Exists", effect="NoSchedule"))
        # rule linux-everywhere: kubernetes.io/os=linux is already effective for prepare
        # and train (workflow level) and nothing is written for them; validate has its own
        # selector, which lacks the key, so the key is added there
        v.add_node_selector_constraint("kubernetes.io/os", "linux")
        # rule prepare-tolerates: tolerations are unaffected (no workflow-level tolerations)
        p.add_toleration(tol("dedicated", "Equal", "etl", "NoSchedule"))

    return workflow_node_selector


POLICY = """\
# workflow_node_selector (kfp v1). The workflow spec has nodeSelector
# {kubernetes.io/os: linux, node-role.example.com/pipelines: "true"}
# (dsl.get_pipeline_conf().set_default_pod_node_selector, in plain.yaml too).
# Mirrors the calls of the CORRECTED source testdata/pipelines/v1/workflow_node_selector.py:
# train: add_node_selector_constraint for the two workflow keys, then pool=gpu, and
# add_toleration; validate (own template nodeSelector): add_node_selector_constraint
# kubernetes.io/os=linux; prepare: add_toleration.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: workflow-node-selector
spec:
  rules:
  - name: gpu-pool
    match:
      names: ["train"]
    nodeSelector: {pool: gpu}
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
  - name: linux-everywhere
    nodeSelector: {kubernetes.io/os: linux}
  - name: prepare-tolerates
    match:
      names: ["prepare"]
    tolerations:
    - {key: dedicated, operator: Equal, value: etl, effect: NoSchedule}
"""

NOTES = """\
# v1 / workflow_node_selector

The workflow spec carries `nodeSelector: {kubernetes.io/os: linux,
node-role.example.com/pipelines: "true"}` (`PipelineConf.set_default_pod_node_selector`;
written last in `spec`). Templates `prepare` and `train` have no nodeSelector; `validate`
has its own `{kubernetes.io/arch: amd64}` in plain.yaml.

- `gpu-pool` (train): train has no nodeSelector, so the new one starts from the
  workflow's value, in the workflow's order, then `pool: gpu`:
  `{kubernetes.io/os: linux, node-role.example.com/pipelines: "true", pool: gpu}`; plus
  a GPU toleration (no workflow-level tolerations, nothing to seed).
- `linux-everywhere` (no match): for prepare the effective value (the workflow's) already
  has `kubernetes.io/os: linux`, so nothing is written; for train it is already in the
  seeded value; validate's own selector lacks it, so it is appended there (no seeding:
  validate already has the field).
- `prepare-tolerates`: a toleration on prepare; its nodeSelector stays absent.
- The workflow-level `spec.nodeSelector` is never changed.

**expected.yaml is compiled from a corrected source, not from the naive one.** The naive
SDK source for the intent "train needs pool=gpu" is `train.add_node_selector_constraint(
"pool", "gpu")`, which compiles to `nodeSelector: {pool: gpu}` on the template. Argo
(`workflowpod.go` addSchedulingConstraints) takes the template's nodeSelector INSTEAD of
the workflow's, whole-field, so that pod would lose `kubernetes.io/os` and
`node-role.example.com/pipelines`. SPEC §2 ("Argo replaces, it does not merge ... the
template field starts from the workflow's value, so effective scheduling only ever grows")
is right; the source therefore adds the workflow's keys first, which is byte-for-byte what
kfsched must write.
"""
