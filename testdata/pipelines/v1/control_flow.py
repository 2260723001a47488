"""KFP v1: nested dsl.ParallelFor, nested dsl.Condition, a @dsl.graph_component (a DAG
template of its own) with a condition inside; selection by paths from the entrypoint."""
from kfp import dsl
from kfp.components import create_component_from_func

from _common import PY_IMAGE, affinity, node_affinity, req, term, tol


def flip_coin() -> str:
    import random
    return random.choice(["heads", "tails"])


def fit(model: str, fold: int) -> float:
    return float(len(model) * fold)


def print_msg(msg: str):
    print(msg)


flip_op = create_component_from_func(flip_coin, base_image=PY_IMAGE)
fit_op = create_component_from_func(
    fit, base_image="registry.example.com/team/trainer:1.4")
print_op = create_component_from_func(print_msg, base_image=PY_IMAGE)


@dsl.graph_component
def retry_block(coin: str):
    print_op("graph start")
    with dsl.Condition(coin == "tails"):
        print_op("graph tails")


def pipeline(scheduled: bool):
    @dsl.pipeline(name="control-flow",
                  description="Loops in loops, nested conditions, a graph component.")
    def control_flow():
        coin = flip_op()
        with dsl.ParallelFor(["resnet", "vit"]) as model:
            with dsl.ParallelFor([1, 2, 3]) as fold:
                f = fit_op(model, fold)
        with dsl.Condition(coin.output == "heads"):
            heads = print_op("heads")
            with dsl.Condition(coin.output != "edge"):
                deep = print_op("heads, not edge").set_display_name("Deep message")
        retry_block(coin.output)

        if not scheduled:
            return
        # rule nested-loop-fit (path for-loop-2/for-loop-4/fit; also selected by image below)
        f.add_toleration(tol("spot", "Exists", effect="NoExecute", seconds=3600))
        f.add_pod_label("example.com/loop", "folds")
        f.add_pod_annotation("example.com/owner", "cv-team")
        f.add_affinity(affinity(node=node_affinity(required=[term(
            req("topology.kubernetes.io/zone", "NotIn", ["us-east1-e"]),
            req("kubernetes.io/arch", "In", ["amd64"]))])))
        # rule first-condition-only (condition-5/*): the heads message, not the nested one
        heads.add_node_selector_constraint("pool", "reporting")
        # rule nested-condition (condition-5/condition-6/print-msg-2)
        deep.add_toleration(tol("reporting", "Exists", effect="PreferNoSchedule"))

        # rules graph-subtree (graph-retry-block-7/**) and deep-by-display-name: the ops
        # inside the graph component are created by retry_block, so an op transformer
        # (kfp's own mechanism for "all ops") makes their calls
        def graph_ops(op):
            if op.name in ("print-msg-3", "print-msg-4"):
                op.add_toleration(tol("example.com/graph", "Equal", "retry", "NoSchedule"))
            return op

        dsl.get_pipeline_conf().add_op_transformer(graph_ops)

    return control_flow


POLICY = """\
# control_flow (kfp v1). Mirrors the calls in testdata/pipelines/v1/control_flow.py
# (op.add_toleration, op.add_affinity, op.add_node_selector_constraint,
# op.add_pod_label, op.add_pod_annotation).
# Paths from the entrypoint (DAG task names): see notes.md.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: control-flow
spec:
  rules:
  - name: nested-loop-fit
    match:
      names: ["for-loop-*/for-loop-*/fit"]
    tolerations:
    - {key: spot, operator: Exists, effect: NoExecute, tolerationSeconds: 3600}
    podLabels: {example.com/loop: folds}
    podAnnotations: {example.com/owner: cv-team}
  - name: trainer-image
    match:
      images: ["registry.example.com/team/*"]
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: NotIn, values: [us-east1-e]}
            - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  - name: first-condition-only
    match:
      names: ["condition-5/*"]
    nodeSelector: {pool: reporting}
  - name: nested-condition
    match:
      names: ["condition-5/condition-6/print-msg-2"]
    tolerations:
    - {key: reporting, operator: Exists, effect: PreferNoSchedule}
  - name: graph-subtree
    match:
      names: ["graph-retry-block-7/**"]
    tolerations:
    - {key: example.com/graph, operator: Equal, value: retry, effect: NoSchedule}
  - name: loops-are-not-pods
    match:
      names: ["for-loop-2", "condition-5", "graph-retry-block-7", "control-flow"]   # DAGs
    nodeSelector: {never: "true"}
"""

NOTES = """\
# v1 / control_flow

Templates: the root DAG `control-flow`; `flip-coin`; DAG `for-loop-2` → DAG `for-loop-4`
→ `fit`; DAG `condition-5` → `print-msg` and DAG `condition-6` → `print-msg-2` (display
name `Deep message`); the graph component's DAG `graph-retry-block-7` → `print-msg-3` and
DAG `condition-8` → `print-msg-4`. Paths are DAG task names from the entrypoint:
`for-loop-2/for-loop-4/fit`, `condition-5/print-msg`, `condition-5/condition-6/print-msg-2`,
`graph-retry-block-7/print-msg-3`, `graph-retry-block-7/condition-8/print-msg-4`.
All four print templates share the component name `Print msg`.

- `nested-loop-fit` (`for-loop-*/for-loop-*/fit`): `spot` Exists NoExecute
  `tolerationSeconds: 3600` (an integer in v1); pod label `example.com/loop` and pod
  annotation `example.com/owner`, each at the START of its map, before kfp's
  `pipelines.kubeflow.org/*` keys. fit has no display name, so in plain.yaml its
  `metadata` is `labels` then `annotations` (kfp adds the component_spec annotations
  after the labels); with a user annotation kfp writes `annotations` FIRST, so in
  expected.yaml the whole `annotations` entry (the flow map with the wrapped
  component_spec JSON, re-wrapped because the new key comes first) moves before
  `labels`.
- `trainer-image` (`registry.example.com/team/*`): the same fit gets one required term
  ANDing `zone NotIn [us-east1-e]` and `arch In [amd64]`.
- `first-condition-only` (`condition-5/*`): print-msg only; `*` does not cross `/`, so
  `condition-5/condition-6/print-msg-2` is not selected.
- `nested-condition`: print-msg-2 by its full path.
- `graph-subtree` (`graph-retry-block-7/**`): the two prints inside the graph component,
  one of them under its nested condition.
- `loops-are-not-pods` names DAG templates only: matches nothing.

Source note: the ops inside the graph component are made by the graph function, so their
calls come from an op transformer (`add_op_transformer`, kfp's own mechanism).
"""
