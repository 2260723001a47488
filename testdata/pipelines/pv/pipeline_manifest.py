"""PipelineVersion after a Pipeline document (include_pipeline_manifest=True), with every
name option set: the Pipeline / version names differ from the pipeline's own name
(`pipelineInfo.name`), and rules select by either."""
from kfp import dsl, kubernetes

from _common import PY

OPTIONS = dict(pipeline_name="fraud-detection", pipeline_display_name="Fraud detection",
               pipeline_version_name="fraud-detection-v3",
               pipeline_version_display_name="Fraud detection v3",
               include_pipeline_manifest=True)


@dsl.component(base_image=PY)
def extract(day: str) -> str:
    return f"s3://example/tx/{day}"


@dsl.component(base_image="registry.example.com/fraud/scorer:3.1")
def score(uri: str) -> float:
    return float(len(uri))


@dsl.component(base_image=PY)
def alert(score: float):
    print(score)


def pipeline(scheduled: bool):
    @dsl.pipeline(name="fraud-model")
    def fraud_model(day: str = "2024-05-01"):
        x = extract(day=day)
        s = score(uri=x.output)
        a = alert(score=s.output).set_display_name("Page the fraud team")

        if not scheduled:
            return
        # rule by-pipeline-name (spec.pipelineName fraud-detection): every task
        for t in (x, s, a):
            kubernetes.add_toleration(t, key="dedicated", operator="Equal", value="fraud",
                                      effect="NoSchedule")
        # rule by-ir-name (pipelineInfo.name fraud-model) AND image
        kubernetes.add_node_selector(s, "example.com/pool", "scoring")
        # rule alert-metadata (display name)
        kubernetes.add_pod_label(a, "example.com/severity", "page")
        kubernetes.add_pod_annotation(a, "example.com/runbook", "https://runbooks.example.com/fraud")

    return fraud_model


POLICY = """\
# pv/pipeline_manifest (KFP PipelineVersion). Mirrors the kfp.kubernetes calls in
# testdata/pipelines/pv/pipeline_manifest.py.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: pv-pipeline-manifest
spec:
  rules:
  - name: by-pipeline-name
    match:
      pipelines: ["fraud-detection"]        # spec.pipelineName
    tolerations:
    - {key: dedicated, operator: Equal, value: fraud, effect: NoSchedule}
  - name: by-ir-name
    match:
      pipelines: ["fraud-model"]            # spec.pipelineSpec.pipelineInfo.name
      images: ["registry.example.com/fraud/*"]
    nodeSelector: {example.com/pool: scoring}
  - name: alert-metadata
    match:
      names: ["Page the fraud team"]
    podLabels: {example.com/severity: page}
    podAnnotations: {example.com/runbook: "https://runbooks.example.com/fraud"}
  - name: version-name-is-not-a-pipeline-name
    match:
      pipelines: ["fraud-detection-v3", "Fraud detection*"]   # metadata.name, displayName
    nodeSelector: {never: "true"}
"""

NOTES = """\
# pv/pipeline_manifest

`KubernetesManifestOptions(pipeline_name="fraud-detection",
pipeline_display_name="Fraud detection", pipeline_version_name="fraud-detection-v3",
pipeline_version_display_name="Fraud detection v3", include_pipeline_manifest=True)` on a
pipeline named `fraud-model`. The file holds two documents separated by `---`: a `Pipeline`
(`metadata.name: fraud-detection`, `spec.displayName`) and the `PipelineVersion`
(`metadata.name: fraud-detection-v3`, `spec.displayName: Fraud detection v3`,
`spec.pipelineName: fraud-detection`, `spec.pipelineSpec.pipelineInfo.name: fraud-model`).
The SDK does not check that `pipelineName` matches `pipelineInfo.name`.

The Pipeline document is not a pipeline to rewrite (no components) and stays byte-identical;
`spec.platformSpec` is created at the end of the second document (the end of the file).

- `by-pipeline-name` (`pipelines: [fraud-detection]`, the `spec.pipelineName`): all three
  tasks get the toleration.
- `by-ir-name` (`pipelines: [fraud-model]`, the IR's `pipelineInfo.name`, AND the scorer
  image): `score` gets the nodeSelector. A PipelineVersion's pipeline has both names.
- `alert-metadata` (display name `Page the fraud team`, task `alert`): pod label and
  annotation.
- `version-name-is-not-a-pipeline-name` matches nothing: the version's `metadata.name` and
  the display names are not pipeline names.
"""
