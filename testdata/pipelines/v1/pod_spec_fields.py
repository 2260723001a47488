"""KFP v1: the pod-spec fields kfp 1.8 has no call for (priorityClassName, schedulerName on
the template; runtimeClassName and topologySpreadConstraints through the template's
podSpecPatch), beside the labels and annotations that queueing and autoscaling read
(op.add_pod_label / op.add_pod_annotation, which kfp 1.8 has).

`train` limits its memory with a pipeline parameter, so kfp 1.8 writes a podSpecPatch of
its own (`json.dumps` of the container's resources): the fields are added to that patch,
which keeps kfp's entries. `evaluate` has no patch and gets a new one. `report` gets only
an annotation. Since kfp 1.8 cannot express the fields, expected.yaml is the scheduled
compile with TEMPLATE_FIELDS written into the compiled workflow object as a user editing
it would (`template[key] = value`; the patch `json.loads`-ed, its new keys set, and
`json.dumps`-ed back), then written by the SDK's own dumper (build_v1.py)."""
from kfp import dsl
from kfp.components import create_component_from_func

from _common import PY_IMAGE


def train(epochs: int) -> float:
    return epochs / 10


def evaluate(score: float) -> bool:
    return score > 0.5


def report(ok: bool) -> str:
    return "ok" if ok else "failed"


train_op = create_component_from_func(train, base_image="pytorch/pytorch:2.1")
evaluate_op = create_component_from_func(evaluate, base_image=PY_IMAGE)
report_op = create_component_from_func(report, base_image=PY_IMAGE)

ZONE_SPREAD = {"labelSelector": {"matchLabels": {"pipelines.kubeflow.org/pipeline-sdk-type": "kfp"}},
               "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
               "whenUnsatisfiable": "ScheduleAnyway"}

# template name -> the fields kfp 1.8 has no call for, in the order they are set: each is
# set on the template (a new key goes last: kfp's podSpecPatch, then priorityClassName and
# schedulerName, after every key kfp writes), and "podSpecPatch" holds the keys set in its
# JSON (runtimeClassName before topologySpreadConstraints)
TEMPLATE_FIELDS = {
    "train": {"podSpecPatch": {"runtimeClassName": "nvidia",
                               "topologySpreadConstraints": [ZONE_SPREAD]},
              "priorityClassName": "ml-high", "schedulerName": "volcano"},
    "evaluate": {"podSpecPatch": {"runtimeClassName": "gvisor"},
                 "priorityClassName": "ml-high"},
}


def pipeline(scheduled: bool):
    @dsl.pipeline(name="pod-spec-fields",
                  description="Priority, scheduler, runtime class and topology spread.")
    def pod_spec_fields(epochs: int = 3, memory: str = "8Gi"):
        t = train_op(epochs).set_display_name("Train model")
        # a pipeline parameter in the resources: kfp 1.8 writes a podSpecPatch
        t.set_memory_limit(memory)
        e = evaluate_op(t.output).set_display_name("Evaluate")
        r = report_op(e.output).set_display_name("Report")
        if not scheduled:
            return
        # rule queue: every step is admitted through the team's Kueue LocalQueue
        for op in (t, e, r):
            op.add_pod_label("kueue.x-k8s.io/queue-name", "ml-team")
        # rule no-disrupt: the report step must not be evicted by consolidation
        r.add_pod_annotation("karpenter.sh/do-not-disrupt", "true")
        r.add_pod_annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "false")

    return pod_spec_fields


POLICY = """\
# pod_spec_fields (kfp v1). podLabels / podAnnotations mirror the op.add_pod_label /
# op.add_pod_annotation calls of testdata/pipelines/v1/pod_spec_fields.py; the other
# fields mirror its TEMPLATE_FIELDS (kfp 1.8 has no call for them).
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: pod-spec-fields
spec:
  rules:
  - name: queue
    podLabels: {kueue.x-k8s.io/queue-name: ml-team}
  - name: gpu-train
    match: {names: ["Train model"]}
    priorityClassName: ml-high
    schedulerName: volcano
    runtimeClassName: nvidia
    topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels: {pipelines.kubeflow.org/pipeline-sdk-type: kfp}
  - name: sandboxed-eval
    match: {names: [Evaluate]}
    priorityClassName: ml-high
    runtimeClassName: gvisor
  - name: no-disrupt
    match: {names: [Report]}
    podAnnotations:
      karpenter.sh/do-not-disrupt: "true"
      cluster-autoscaler.kubernetes.io/safe-to-evict: "false"
"""

NOTES = """\
# v1 / pod_spec_fields

Three templates, display names `Train model`, `Evaluate`, `Report`.

- queue: the Kueue queue-name label on every template (`op.add_pod_label`), before kfp's
  own `pipelines.kubeflow.org/*` labels.
- gpu-train: `train` has kfp's podSpecPatch (its memory limit is the pipeline parameter
  `memory`): `runtimeClassName` and `topologySpreadConstraints` are added to that JSON after
  kfp's `containers`, which stays; `priorityClassName` and `schedulerName` are template
  fields, after the podSpecPatch kfp wrote last.
- sandboxed-eval: `evaluate` has no podSpecPatch: a new one holds the runtime class, last
  of kfp's keys, before the new `priorityClassName`.
- no-disrupt: Karpenter's and cluster-autoscaler's annotations on `report`
  (`op.add_pod_annotation`), so `annotations` comes before `labels` in its metadata.

Source note: kfp 1.8.22 has no call for priorityClassName, schedulerName, runtimeClassName
or topologySpreadConstraints; build_v1.py writes TEMPLATE_FIELDS into the compiled
workflow object (as a user editing it would) and dumps it with the SDK's own dumper, so
expected.yaml has kfp's layout: 80-column folding of the long podSpecPatch string
included.
"""
