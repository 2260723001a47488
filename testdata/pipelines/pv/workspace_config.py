"""PipelineVersion whose plain.yaml has a `spec.platformSpec` without `deploymentSpec`:
only the pipeline-level `pipelineConfig` (a workspace and a TTL). Scheduling creates
`deploymentSpec`, which sorts BEFORE `pipelineConfig`."""
from kfp import dsl, kubernetes

from _common import PY

OPTIONS = {}


@dsl.component(base_image=PY)
def download(url: str) -> str:
    return url


@dsl.component(base_image=PY)
def unpack(archive: str) -> str:
    return archive


def pipeline(scheduled: bool):
    @dsl.pipeline(name="pv-workspace-config",
                  pipeline_config=dsl.PipelineConfig(
                      workspace=dsl.WorkspaceConfig(size="10Gi"),
                      ttl_seconds_after_finished=86400))
    def pv_workspace_config(url: str = "https://example.com/data.tar"):
        d = download(url=url)
        u = unpack(archive=d.output)

        if not scheduled:
            return
        # rule io-nodes (every task)
        for t in (d, u):
            kubernetes.add_node_selector(t, "example.com/disk", "nvme")
        # rule unpack-spot
        kubernetes.add_toleration(u, key="cloud.example.com/spot", operator="Exists",
                                  effect="NoSchedule")

    return pv_workspace_config


POLICY = """\
# pv/workspace_config (KFP PipelineVersion). Mirrors the kfp.kubernetes calls in
# testdata/pipelines/pv/workspace_config.py.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: pv-workspace-config
spec:
  rules:
  - name: io-nodes
    nodeSelector: {example.com/disk: nvme}
  - name: unpack-spot
    match:
      names: ["unpack"]
    tolerations:
    - {key: cloud.example.com/spot, operator: Exists, effect: NoSchedule}
"""

NOTES = """\
# pv/workspace_config

`@dsl.pipeline(pipeline_config=dsl.PipelineConfig(workspace=dsl.WorkspaceConfig(size="10Gi"),
ttl_seconds_after_finished=86400))`: plain.yaml already has `spec.platformSpec`, holding only
`platforms.kubernetes.pipelineConfig` (`resourceTtlOnCompletion`, `workspace` with an empty
flow map `pvcSpecPatch: {}`), no `deploymentSpec`.

- `io-nodes` (no match): nodeSelector on both tasks.
- `unpack-spot` (`unpack`): a toleration.

So `deploymentSpec.executors` is created inside the existing `platforms.kubernetes`, as its
FIRST key: `deploymentSpec` sorts before `pipelineConfig`. `pipelineConfig` is unchanged.
"""
