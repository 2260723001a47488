"""KFP v2: pipelines used as components, nested twice (root -> outer -> inner -> train),
the outer one used twice; selection by task path (`outer/inner/train`, `outer-2/**`,
`outer/*`, `**/inner/*`), by renamed component names and executor labels."""
from kfp import dsl, kubernetes

PY = "python:3.11-slim"


@dsl.component(base_image=PY)
def train(learning_rate: float) -> float:
    return learning_rate * 2


@dsl.component(base_image=PY)
def evaluate(score: float) -> str:
    return "pass" if score > 0.01 else "fail"


@dsl.component(base_image=PY)
def report(verdict: str):
    print(verdict)


@dsl.component(base_image="registry.example.com/team/trainer:1.4")
def fine_tune(steps: int) -> str:
    return f"checkpoint-{steps}"


def make_outer(copy: int, scheduled: bool):
    """Both copies compile to the same plain IR as one reused sub-pipeline; they are two
    objects only because SDK calls inside a sub-pipeline apply to every use of it.

    kfp 2.17.3 bug (compiler/pipeline_spec_builder.py `_merge_deployment_spec`): while it
    renames the executor labels of a sub-pipeline whose labels collide with ones already
    merged (the second copy), it merges that copy's platform config into the outer file
    after EACH renamed executor, so config of a not-yet-renamed label lands on the FIRST
    copy's executor of that name (shallow update, dropping that executor's own keys). So
    the second copy of `outer` (3 executors) carries no config; see make_wrapper."""

    @dsl.pipeline(name="inner")
    def inner(learning_rate: float = 0.1) -> float:
        t = train(learning_rate=learning_rate)
        e = evaluate(score=t.output)
        if scheduled and copy == 1:
            # rule exact-path: outer/inner/train
            kubernetes.add_toleration(t, key="nvidia.com/gpu", operator="Exists",
                                      effect="NoSchedule")
            kubernetes.add_node_affinity(t, match_expressions=[
                {"key": "nvidia.com/gpu.product", "operator": "In",
                 "values": ["NVIDIA-A100-SXM4-80GB"]}])
            # rule first-copy-subtree: outer/**
            for x in (t, e):
                kubernetes.add_node_selector(x, "pool", "copy-1")
            # rule trains-outside-copy-2: **/train minus outer-2/**
            kubernetes.add_pod_label(t, "role", "trainer")
            # rule deep-evaluate: **/inner/evaluate minus outer-2/**
            kubernetes.add_node_affinity(e, match_expressions=[
                {"key": "topology.kubernetes.io/zone", "operator": "In",
                 "values": ["us-east1-b", "us-east1-c"]}], weight=20)
        return t.output

    @dsl.pipeline(name="outer")
    def outer(learning_rate: float = 0.1):
        i = inner(learning_rate=learning_rate)
        retrain = train(learning_rate=i.output)
        if scheduled and copy == 1:
            # rule first-copy-subtree: outer/**
            kubernetes.add_node_selector(retrain, "pool", "copy-1")
            # rule trains-outside-copy-2: **/train minus outer-2/**
            kubernetes.add_pod_label(retrain, "role", "trainer")
            # rule one-level-star: outer/* (outer/inner is a DAG, not a pod)
            kubernetes.add_pod_label(retrain, "level", "one")
            # rule renamed-component: train-2 (comp-train-2 = outer/train)
            kubernetes.add_pod_annotation(retrain, "example.com/note", "outer/train, renamed")

    return outer


def make_wrapper(copy: int, scheduled: bool):
    """wrapper -> solo -> fine-tune, also used twice. Each level has ONE executor, which
    the compiler renames before its first merge, so here the second copy can carry its
    own config without the bug described in make_outer."""

    @dsl.pipeline(name="solo")
    def solo(steps: int = 100) -> str:
        f = fine_tune(steps=steps)
        if scheduled:
            # rule all-fine-tunes: fine-tune (task key, both copies)
            kubernetes.add_toleration(f, key="dedicated", operator="Equal", value="training",
                                      effect="NoSchedule")
            if copy == 1:
                # rule first-wrapper: wrapper/solo/fine-tune
                kubernetes.add_node_selector(f, "pool", "wrapper-1")
            else:
                # rule second-wrapper-subtree: wrapper-2/**
                kubernetes.add_node_selector(f, "pool", "wrapper-2")
                # rule second-copy-by-component: comp-fine-tune-2 / exec-fine-tune-2
                kubernetes.add_toleration(f, key="example.com/copy", operator="Equal",
                                          value="two", effect="PreferNoSchedule")
                kubernetes.add_pod_label(f, "copy", "two")
        return f.output

    @dsl.pipeline(name="wrapper")
    def wrapper(steps: int = 100):
        solo(steps=steps)

    return wrapper


def pipeline(scheduled: bool):
    outer1 = make_outer(1, scheduled)
    outer2 = make_outer(2, scheduled)
    wrapper1 = make_wrapper(1, scheduled)
    wrapper2 = make_wrapper(2, scheduled)

    @dsl.pipeline(name="nested-subpipelines",
                  description="Sub-pipelines inside sub-pipelines, each used twice.")
    def nested_subpipelines(learning_rate: float = 0.05):
        outer1(learning_rate=learning_rate)
        outer2(learning_rate=learning_rate)
        wrapper1(steps=100)
        wrapper2(steps=200)
        final = report(verdict="done")
        if scheduled:
            # rule root-report: path == key at the root
            kubernetes.add_node_selector(final, "kubernetes.io/os", "linux")

    return nested_subpipelines


POLICY = """\
# nested_subpipelines (kfp v2). Mirrors the kfp.kubernetes calls in
# testdata/pipelines/v2/nested_subpipelines.py (calls inside the sub-pipelines, per copy).
# Task paths in this file:
#   outer/inner/train        (comp-train,       exec-train)
#   outer/inner/evaluate     (comp-evaluate,    exec-evaluate)
#   outer/train              (comp-train-2,     exec-train-2)
#   outer-2/inner/train      (comp-train-3,     exec-train-3)
#   outer-2/inner/evaluate   (comp-evaluate-2,  exec-evaluate-2)
#   outer-2/train            (comp-train-2-2,   exec-train-2-2)
#   wrapper/solo/fine-tune   (comp-fine-tune,   exec-fine-tune)
#   wrapper-2/solo/fine-tune (comp-fine-tune-2, exec-fine-tune-2)
#   report                   (comp-report,      exec-report)
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: nested-subpipelines
spec:
  rules:
  - name: exact-path
    match:
      names: ["outer/inner/train"]   # not outer-2/inner/train, whose task key is also train
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-A100-SXM4-80GB]}
  - name: first-copy-subtree
    match:
      names: ["outer/**"]
    nodeSelector: {pool: copy-1}
  - name: trains-outside-copy-2
    match:
      names: ["**/train"]
    exclude:
      names: ["outer-2/**"]
    podLabels: {role: trainer}
  - name: deep-evaluate
    match:
      names: ["**/inner/evaluate"]
    exclude:
      names: ["evaluate-2"]          # comp-evaluate-2 without "comp-": outer-2/inner/evaluate
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 20
          preference:
            matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b, us-east1-c]}
  - name: one-level-star
    match:
      names: ["outer/*"]             # * does not cross '/': only outer/train is a pod
    podLabels: {level: one}
  - name: renamed-component
    match:
      names: ["train-2"]             # comp-train-2 = outer/train; outer-2/train is train-2-2
    podAnnotations: {example.com/note: "outer/train, renamed"}
  - name: all-fine-tunes
    match:
      names: ["fine-tune"]           # task key, both copies
    tolerations:
    - {key: dedicated, operator: Equal, value: training, effect: NoSchedule}
  - name: first-wrapper
    match:
      names: ["wrapper/solo/fine-tune"]
    nodeSelector: {pool: wrapper-1}
  - name: second-wrapper-subtree
    match:
      names: ["wrapper-2/**"]
    nodeSelector: {pool: wrapper-2}
  - name: second-copy-by-component
    match:
      names: ["comp-fine-tune-2", "exec-fine-tune-2"]
    tolerations:
    - {key: example.com/copy, operator: Equal, value: two, effect: PreferNoSchedule}
    podLabels: {copy: two}
  - name: root-report
    match:
      names: ["report"]
    nodeSelector: {kubernetes.io/os: linux}
  - name: no-such-path
    match:
      names: ["inner/train", "solo/*"]   # paths start at the root
    nodeSelector: {never: "true"}
"""

NOTES = """\
# v2 / nested_subpipelines

Pipelines used as components, nested twice and each used twice: `outer` contains `inner`
(`train`, `evaluate`) and a `train` of its own; `wrapper` contains `solo`, which contains
`fine-tune`; the root uses `outer` twice, `wrapper` twice and has a `report` task.
kfp 2.17.3 copies the second use of a subtree with suffixed component and executor names
while the inner task keys stay the same (table at the top of policy.yaml), so only paths,
component names and executor labels tell `outer/inner/train` from `outer-2/inner/train`.

- `exact-path` (`outer/inner/train`): only exec-train gets `nvidia.com/gpu` Exists
  NoSchedule and a required term `nvidia.com/gpu.product In [NVIDIA-A100-SXM4-80GB]`.
- `first-copy-subtree` (`outer/**`): the three pods of the first copy get `pool=copy-1`.
- `trains-outside-copy-2` (`**/train` minus `outer-2/**`): outer/inner/train, outer/train.
- `deep-evaluate` (`**/inner/evaluate` minus `evaluate-2`, the second copy's component
  name without `comp-`): outer/inner/evaluate, one preferred term (weight 20.0).
- `one-level-star` (`outer/*`): `*` does not cross `/`, so only outer/train (exec-train-2);
  `outer/inner` is a DAG, not a pod.
- `renamed-component` (`train-2`): outer/train, whose component is `comp-train-2`; the
  second copy's is `comp-train-2-2`.
- `all-fine-tunes` (task key `fine-tune`): both copies; `first-wrapper`
  (`wrapper/solo/fine-tune`) and `second-wrapper-subtree` (`wrapper-2/**`) give each copy
  its own `pool`; `second-copy-by-component` (`comp-fine-tune-2`, `exec-fine-tune-2`) adds
  a toleration after the first and a pod label to the second copy only.
- `root-report`: the root task `report` (its path is its key).
- `no-such-path` (`inner/train`, `solo/*`) matches nothing: paths start at the root.

SDK limitation (source changed, see `make_outer`): kfp 2.17.3 mis-merges platform config
of the SECOND use of a sub-pipeline with several executors: config on a label it has not
renamed yet is merged onto the FIRST copy's executor of that name, with a shallow update.
So the second copy of `outer` gets no config here (rules select it only negatively); the
`wrapper` family has one executor per level, which the compiler renames before merging,
so its second copy is scheduled differently from the first. The SDK cannot put platform
config on a sub-pipeline task itself (ValueError), so calls are made inside each copy's
sub-pipeline; plain.yaml is identical to compiling one reused `outer` / `wrapper`.
"""
