"""PipelineVersion of v2/large_300: 300 tasks (50 shards x 6 components), every one
scheduled: the benchmark input in the manifest format."""
from _common import pv_policy, v2_source

BASE = v2_source("large_300")
OPTIONS = {}


def pipeline(scheduled: bool):
    return BASE.pipeline(scheduled)


POLICY = pv_policy(BASE.POLICY, "large_300", "large_300")

NOTES = """\
# pv/large_300

v2/large_300 compiled with `kubernetes_manifest_format=True` and default
`KubernetesManifestOptions()`: one `PipelineVersion` named after the pipeline, the IR under
`spec.pipelineSpec`, the decorator's description in `spec.description` (the first key of
`spec`) and in `pipelineInfo.description`. The platform spec that v2/large_300 has
as a second document is here `spec.platformSpec`, created at the end of the file: the same data, 8
columns deeper (executor entries at 12 spaces), so a long value may fold at other words.
Policy: v2/large_300's, with `kinds: [PipelineSpec]` read as `kinds: [PipelineVersion]`.

---

""" + BASE.NOTES
