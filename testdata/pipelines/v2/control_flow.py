"""KFP v2: nested ParallelFor, dsl.If / dsl.Elif / dsl.Else, a deprecated dsl.Condition,
a condition inside a loop; selection through the task paths the groups create."""
from kfp import dsl, kubernetes

PY = "python:3.11-slim"


@dsl.component(base_image=PY)
def flip_coin() -> str:
    import random
    return random.choice(["heads", "tails", "edge"])


@dsl.component(base_image=PY)
def fit(model: str, fold: int) -> float:
    return float(len(model) * fold)


@dsl.component(base_image=PY)
def report(message: str):
    print(message)


@dsl.component(base_image="registry.example.com/ml/scorer:3.2")
def score(value: float) -> float:
    return value / 10


def pipeline(scheduled: bool):
    @dsl.pipeline(name="control-flow",
                  description="Loops in loops, branches, a condition inside a loop.")
    def control_flow(threshold: float = 0.5):
        coin = flip_coin()
        with dsl.ParallelFor(["resnet", "vit"]) as model:
            with dsl.ParallelFor([1, 2, 3], parallelism=2) as fold:
                f = fit(model=model, fold=fold)
                s = score(value=f.output)
                with dsl.If(s.output > threshold):
                    good = report(message="above threshold")
        with dsl.If(coin.output == "heads"):
            heads = report(message="heads")
        with dsl.Elif(coin.output == "tails"):
            tails = report(message="tails")
        with dsl.Else():
            edge = report(message="edge")
        with dsl.Condition(coin.output != "heads"):
            legacy = report(message="legacy condition").set_display_name("Legacy report")

        if not scheduled:
            return
        # rule loop-fits (path for-loop-2/for-loop-4/fit)
        kubernetes.add_toleration(f, key="workload", operator="Equal", value="cv-training",
                                  effect="NoSchedule")
        kubernetes.add_node_affinity(f, match_expressions=[
            {"key": "node.kubernetes.io/instance-type", "operator": "In",
             "values": ["g5.xlarge", "g5.2xlarge"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}])
        # rule anything-in-inner-loop (for-loop-2/for-loop-4/*): fit and score
        for t in (f, s):
            kubernetes.add_pod_label(t, "stage", "sweep")
        # rule branch-reports (condition-branches-*/*/report*)
        for t in (heads, tails, edge):
            kubernetes.add_node_selector(t, "pool", "reporting")
        # rule loop-condition-report (**/condition-5/*)
        kubernetes.add_toleration(good, key="reporting", operator="Exists",
                                  effect="PreferNoSchedule")
        # rule legacy-by-display-name
        kubernetes.add_pod_annotation(legacy, "example.com/deprecated", "dsl.Condition")
        # rule scorer-image
        kubernetes.add_node_selector(s, "example.com/scorer-pool", "shared")

    return control_flow


POLICY = """\
# control_flow (kfp v2). Mirrors the kfp.kubernetes calls in
# testdata/pipelines/v2/control_flow.py. Task paths (see notes.md):
#   flip-coin
#   for-loop-2/for-loop-4/fit | score | condition-5/report
#   condition-branches-6/condition-7/report-2   (dsl.If)
#   condition-branches-6/condition-8/report-3   (dsl.Elif)
#   condition-branches-6/condition-9/report-4   (dsl.Else)
#   condition-10/report-5                       (dsl.Condition, display name "Legacy report")
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: control-flow
spec:
  rules:
  - name: loop-fits
    match:
      names: ["for-loop-2/for-loop-4/fit"]
    tolerations:
    - {key: workload, operator: Equal, value: cv-training, effect: NoSchedule}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: node.kubernetes.io/instance-type, operator: In, values: [g5.xlarge, g5.2xlarge]}
            - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  - name: anything-in-inner-loop
    match:
      names: ["for-loop-2/for-loop-4/*"]   # fit and score; condition-5 is a DAG
    podLabels: {stage: sweep}
  - name: branch-reports
    match:
      names: ["condition-branches-*/*/report*"]
    nodeSelector: {pool: reporting}
  - name: loop-condition-report
    match:
      names: ["**/condition-5/*"]
    tolerations:
    - {key: reporting, operator: Exists, effect: PreferNoSchedule}
  - name: legacy-by-display-name
    match:
      names: ["Legacy report"]
    podAnnotations: {example.com/deprecated: dsl.Condition}
  - name: scorer-image
    match:
      images: ["registry.example.com/ml/*"]
    nodeSelector: {example.com/scorer-pool: shared}
  - name: loops-are-not-pods
    match:
      names: ["for-loop-*", "condition-*"]  # group tasks only: no pod has these names
    nodeSelector: {never: "true"}
"""

NOTES = """\
# v2 / control_flow

Groups become DAG components (`comp-for-loop-N`, `comp-condition-branches-N`,
`comp-condition-N`) and their tasks' keys become path segments. Paths:
`for-loop-2/for-loop-4/{fit,score}`, `for-loop-2/for-loop-4/condition-5/report`, the
If/Elif/Else reports under `condition-branches-6/condition-{7,8,9}/report-{2,3,4}`, and the
deprecated `dsl.Condition` at `condition-10/report-5` (display name `Legacy report`).
`flip-coin` gets nothing.

- `loop-fits`: the nested-loop fit: `workload=cv-training:NoSchedule` and ONE required term
  ANDing `instance-type In [g5.xlarge, g5.2xlarge]` and `kubernetes.io/arch In [amd64]`.
- `anything-in-inner-loop` (`for-loop-2/for-loop-4/*`): fit and score (the nested condition
  is a DAG; its report is one level deeper) get pod label `stage=sweep`.
- `branch-reports` (`condition-branches-*/*/report*`): the three If/Elif/Else reports.
- `loop-condition-report` (`**/condition-5/*`): the report inside the loop's condition.
- `legacy-by-display-name`: annotation on the dsl.Condition report.
- `scorer-image` (`registry.example.com/ml/*`, `*` crosses `/` in images): score.
- `loops-are-not-pods` matches nothing: group tasks are not components.
"""
