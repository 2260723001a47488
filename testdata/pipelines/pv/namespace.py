"""PipelineVersion with a namespace (and the Pipeline document): v2/container_components
compiled with KubernetesManifestOptions(namespace=..., include_pipeline_manifest=True)."""
from _common import pv_policy, v2_source

BASE = v2_source("container_components")
OPTIONS = dict(namespace="team-vision", include_pipeline_manifest=True)


def pipeline(scheduled: bool):
    return BASE.pipeline(scheduled)


POLICY = pv_policy(BASE.POLICY, "namespace", "container_components")

NOTES = """\
# pv/namespace

v2/container_components (same source, same policy: see below) compiled with
`KubernetesManifestOptions(namespace="team-vision", include_pipeline_manifest=True)`: a
`Pipeline` and a `PipelineVersion`, both with `metadata.namespace: team-vision` after
`metadata.name` (sorted keys), and the decorator's description in the Pipeline's
`spec.description`, the PipelineVersion's `spec.description` (the first key of `spec`) and
`spec.pipelineSpec.pipelineInfo.description`. plain.yaml has no `spec.platformSpec`;
expected.yaml adds it at the end of the file. The namespace plays no part in matching.

What the rules select is as in v2/container_components (its notes follow); the executor
entries are the same data, 8 columns deeper, so long values may fold at other words.

---

""" + BASE.NOTES
