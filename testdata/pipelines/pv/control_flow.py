"""PipelineVersion of v2/control_flow: nested ParallelFor, dsl.If/Elif/Else, dsl.Condition,
selection by task paths through group tasks."""
from _common import pv_policy, v2_source

BASE = v2_source("control_flow")
OPTIONS = {}


def pipeline(scheduled: bool):
    return BASE.pipeline(scheduled)


POLICY = pv_policy(BASE.POLICY, "control_flow", "control_flow")

NOTES = """\
# pv/control_flow

v2/control_flow compiled with `kubernetes_manifest_format=True` and default
`KubernetesManifestOptions()`: one `PipelineVersion` named after the pipeline, the IR under
`spec.pipelineSpec`, the decorator's description in `spec.description` (the first key of
`spec`) and in `pipelineInfo.description`. The platform spec that v2/control_flow has
as a second document is here `spec.platformSpec`, created at the end of the file: the same data, 8
columns deeper (executor entries at 12 spaces), so a long value may fold at other words.
Policy: v2/control_flow's, with `kinds: [PipelineSpec]` read as `kinds: [PipelineVersion]`.

---

""" + BASE.NOTES
