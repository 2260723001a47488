"""PipelineVersion, default manifest options (no Pipeline document, no namespace, no
description): plain.yaml has no `spec.platformSpec`; every kfp-kubernetes scheduling call
once (tolerations incl. tolerationSeconds, nodeSelector, required and preferred node
affinity, pod label, pod annotation, one long enough to be folded at 80 columns)."""
from kfp import dsl, kubernetes

from _common import PY

OPTIONS = {}


@dsl.component(base_image=PY)
def preprocess(rows: int) -> str:
    return f"s3://example/clean/{rows}"


@dsl.container_component
def train(data: str, epochs: int):
    return dsl.ContainerSpec(image="pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
                             command=["python", "-m", "train"],
                             args=["--data", data, "--epochs", epochs])


@dsl.component(base_image=PY)
def evaluate(data: str) -> float:
    return float(len(data))


@dsl.component(base_image=PY)
def report(score: float):
    print(score)


LONG_NOTE = ("Batch preprocessing and evaluation run on the shared CPU pool; page the data "
             "platform on-call before moving them.")


def pipeline(scheduled: bool):
    @dsl.pipeline(name="pv-basic")
    def pv_basic(rows: int = 1000, epochs: int = 3):
        p = preprocess(rows=rows)
        t = train(data=p.output, epochs=epochs)
        e = evaluate(data=p.output).after(t)
        report(score=e.output)

        if not scheduled:
            return
        # rule gpu-train (task key train)
        kubernetes.add_toleration(t, key="nvidia.com/gpu", operator="Exists",
                                  effect="NoSchedule")
        kubernetes.add_toleration(t, key="cloud.example.com/spot", operator="Equal",
                                  value="true", effect="NoExecute", toleration_seconds=600)
        kubernetes.add_node_selector(t, "cloud.example.com/accelerator", "nvidia-a100")
        kubernetes.add_node_affinity(t, match_expressions=[
            {"key": "topology.kubernetes.io/zone", "operator": "In",
             "values": ["us-east1-b", "us-east1-c"]}])
        kubernetes.add_node_affinity(t, match_expressions=[
            {"key": "example.com/local-nvme", "operator": "Exists"}], weight=30)
        # rule cpu-batch (preprocess, evaluate)
        for x in (p, e):
            kubernetes.add_toleration(x, key="workload", operator="Equal", value="batch",
                                      effect="NoSchedule")
            kubernetes.add_pod_label(x, "team", "data-platform")
            kubernetes.add_pod_annotation(x, "example.com/note", LONG_NOTE)

    return pv_basic


POLICY = f"""\
# pv/basic (KFP PipelineVersion). Mirrors the kfp.kubernetes calls in
# testdata/pipelines/pv/basic.py: add_toleration x2, add_node_selector and
# add_node_affinity (required, then preferred with weight 30) on train; add_toleration,
# add_pod_label and add_pod_annotation on preprocess and evaluate.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: pv-basic
spec:
  rules:
  - name: gpu-train
    match:
      names: ["train"]
      kinds: ["PipelineVersion"]
    tolerations:
    - {{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}
    - {{key: cloud.example.com/spot, operator: Equal, value: "true", effect: NoExecute, tolerationSeconds: 600}}
    nodeSelector: {{cloud.example.com/accelerator: nvidia-a100}}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {{key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b, us-east1-c]}}
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 30
          preference:
            matchExpressions:
            - {{key: example.com/local-nvme, operator: Exists}}
  - name: cpu-batch
    match:
      names: ["preprocess", "evaluate"]
    tolerations:
    - {{key: workload, operator: Equal, value: batch, effect: NoSchedule}}
    podLabels: {{team: data-platform}}
    podAnnotations:
      example.com/note: "{LONG_NOTE}"
  - name: only-ir
    match:
      kinds: ["PipelineSpec"]
    nodeSelector: {{never: "true"}}
"""

NOTES = """\
# pv/basic

`Compiler().compile(..., kubernetes_manifest_format=True)` with default
`KubernetesManifestOptions()`: one `PipelineVersion` document (pipelines.kubeflow.org/v2beta1),
`metadata.name` = `spec.pipelineName` = `spec.displayName` = `pv-basic` (the pipeline
name), the IR under `spec.pipelineSpec`. No header comment, no `---`. Tasks `preprocess`,
`train` (container component, pytorch image), `evaluate`, `report`.

plain.yaml has no `spec.platformSpec` (the SDK writes it only when non-empty). expected.yaml
is plain.yaml plus a `  platformSpec:` block after the last line: `platformSpec` sorts after
`pipelineSpec`, and the whole document is written with `yaml.dump_all(sort_keys=True)` and
PyYAML defaults, so executors and every key inside them are sorted, sequences are not
indented under their key, and the executor entries sit at 12 spaces
(`spec.platformSpec.platforms.kubernetes.deploymentSpec.executors.<exec>`).

- `gpu-train` (`train`, AND `kinds: [PipelineVersion]`): two tolerations (the second
  `tolerationSeconds: '600'`, a quoted string), nodeSelector `labels`, `nodeAffinity` with
  the required term first and the preferred one with `weight: 30.0`.
- `cpu-batch` (`preprocess`, `evaluate`): a toleration, `podMetadata.labels.team` and a long
  `podMetadata.annotations.example.com/note`: PyYAML folds that plain scalar at the first
  space after column 80, continuation lines indented 2 more than the key (20 spaces here).
- `only-ir` (`kinds: [PipelineSpec]`) matches nothing: this file's kind is `PipelineVersion`.
- `report` is not selected: no executor entry.
"""
