"""PipelineVersion of v2/reused_components: one component behind six tasks and another behind
three (one executor per task), the decorator's description."""
from _common import pv_policy, v2_source

BASE = v2_source("reused_components")
OPTIONS = {}


def pipeline(scheduled: bool):
    return BASE.pipeline(scheduled)


POLICY = pv_policy(BASE.POLICY, "reused_components", "reused_components")

NOTES = """\
# pv/reused_components

v2/reused_components compiled with `kubernetes_manifest_format=True` and default
`KubernetesManifestOptions()`: one `PipelineVersion` named after the pipeline, the IR under
`spec.pipelineSpec`, the decorator's description in `spec.description` (the first key of
`spec`) and in `pipelineInfo.description`. The platform spec that v2/reused_components has
as a second document is here `spec.platformSpec`, created at the end of the file: the same data, 8
columns deeper (executor entries at 12 spaces), so a long value may fold at other words.
Policy: v2/reused_components's, with `kinds: [PipelineSpec]` read as `kinds: [PipelineVersion]`.

---

""" + BASE.NOTES
