"""PipelineVersion of a pipeline whose description comes from its docstring (several
lines, a non-ASCII character), with the Pipeline document: the description is the first
key of both documents' `spec`, a multi-line quoted scalar."""
from kfp import dsl, kubernetes

from _common import PY

OPTIONS = dict(include_pipeline_manifest=True)


@dsl.component(base_image=PY)
def fetch(source: str) -> str:
    return source


@dsl.component(base_image=PY)
def transform(raw: str) -> str:
    return raw.upper()


def pipeline(scheduled: bool):
    @dsl.pipeline(name="nightly-etl")
    def nightly_etl(source: str = "s3://example/raw"):
        """Nightly ETL — fetch and transform.

        Runs every night at 02:00 UTC; the transform step needs the memory-optimised pool
        and is allowed on spot nodes.
        """
        f = fetch(source=source)
        t = transform(raw=f.output)

        if not scheduled:
            return
        # rule nightly-spot (pipelines nightly-*): both tasks
        for x in (f, t):
            kubernetes.add_toleration(x, key="cloud.example.com/spot", operator="Exists")
        # rule memory-pool (transform)
        kubernetes.add_node_selector(t, "example.com/pool", "highmem")
        kubernetes.add_node_affinity(t, match_expressions=[
            {"key": "example.com/memory-gib", "operator": "Gt", "values": ["255"]}])

    return nightly_etl


POLICY = """\
# pv/description (KFP PipelineVersion). Mirrors the kfp.kubernetes calls in
# testdata/pipelines/pv/description.py.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: pv-description
spec:
  rules:
  - name: nightly-spot
    match:
      pipelines: ["nightly-*"]
    tolerations:
    - {key: cloud.example.com/spot, operator: Exists}
  - name: memory-pool
    match:
      names: ["transform"]
    nodeSelector: {example.com/pool: highmem}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: example.com/memory-gib, operator: Gt, values: ["255"]}
"""

NOTES = """\
# pv/description

The pipeline has no `description=` in its decorator; kfp takes its docstring (several
lines, with an em dash; kfp's docstring parsing joins the summary and the body with one
`\\n`, dropping the blank line between them). With `include_pipeline_manifest=True` the description is written
three times: the Pipeline's `spec.description`, the PipelineVersion's `spec.description`
(both the FIRST key of `spec`, before `displayName`: sorted keys) and
`spec.pipelineSpec.pipelineInfo.description`. PyYAML writes it as a double-quoted scalar
(the em dash is escaped as `\\u2014`, `allow_unicode` being off) spread over several lines
with `\\` continuations. None of that changes: `spec.platformSpec` is created after
`pipelineSpec`, at the end of the file, because `description` sorts first.

- `nightly-spot` (`pipelines: [nightly-*]`): a toleration without effect on both tasks
  (`- key: cloud.example.com/spot` / `operator: Exists`).
- `memory-pool` (`transform`): nodeSelector and a required `Gt` term (`values: ['255']`,
  quoted because it looks like a number).
"""
