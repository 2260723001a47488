"""PipelineVersion of v2/nested_subpipelines: pipelines used as components, nested twice,
each family used twice; selection by task paths and renamed component / executor names."""
from _common import pv_policy, v2_source

BASE = v2_source("nested_subpipelines")
OPTIONS = {}


def pipeline(scheduled: bool):
    return BASE.pipeline(scheduled)


POLICY = pv_policy(BASE.POLICY, "nested_subpipelines", "nested_subpipelines")

NOTES = """\
# pv/nested_subpipelines

v2/nested_subpipelines compiled with `kubernetes_manifest_format=True` and default
`KubernetesManifestOptions()`: one `PipelineVersion` named after the pipeline, the IR under
`spec.pipelineSpec`, the decorator's description in `spec.description` (the first key of
`spec`) and in `pipelineInfo.description`. The platform spec that v2/nested_subpipelines has
as a second document is here `spec.platformSpec`, created at the end of the file: the same data, 8
columns deeper (executor entries at 12 spaces), so a long value may fold at other words.
Policy: v2/nested_subpipelines's, with `kinds: [PipelineSpec]` read as `kinds: [PipelineVersion]`.

kfp 2.17.3 mis-merges the platform config of the second use of a sub-pipeline with several
executors (see the v2 notes below); the source schedules around it, as in v2, and the
result is deterministic: compiled under PYTHONHASHSEED 0, 1, 123 and random, every pv case
was byte-identical.

---

""" + BASE.NOTES
