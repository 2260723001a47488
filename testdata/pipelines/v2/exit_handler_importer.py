"""KFP v2: dsl.ExitHandler and dsl.importer. The SDK silently drops scheduling calls on an
importer task; rules that select every task must leave the importer alone."""
from kfp import dsl, kubernetes

PY = "python:3.11-slim"


@dsl.component(base_image=PY)
def validate_dataset(data: dsl.Input[dsl.Dataset]) -> int:
    return len(data.uri)


@dsl.component(base_image="gcr.io/example-project/ingest:2024.05.1")
def ingest(rows: int) -> str:
    return f"ingested {rows}"


@dsl.component(base_image=PY)
def cleanup_and_notify(status: dsl.PipelineTaskFinalStatus, channel: str):
    print(channel, status.state)


def pipeline(scheduled: bool):
    @dsl.pipeline(name="exit-handler-importer",
                  description="Import a dataset, ingest it, always clean up.")
    def exit_handler_importer(channel: str = "#ml-alerts"):
        exit_task = cleanup_and_notify(channel=channel)
        with dsl.ExitHandler(exit_task, name="ingest-and-validate"):
            raw = dsl.importer(artifact_uri="gs://example-bucket/datasets/clicks/2024-05-01",
                               artifact_class=dsl.Dataset, reimport=False,
                               metadata={"source": "clicks"})
            check = validate_dataset(data=raw.output)
            load = ingest(rows=check.output)

        if not scheduled:
            return
        # rule every-task (no match): importers included in the source on purpose; the SDK
        # drops these calls for the importer, as SPEC does (importers are not components).
        for t in (exit_task, raw, check, load):
            kubernetes.add_toleration(t, key="node.kubernetes.io/unreachable",
                                      operator="Exists", effect="NoExecute",
                                      toleration_seconds=300)
            kubernetes.add_pod_label(t, "app.kubernetes.io/managed-by", "kfsched")
        # rule exit-task-anywhere
        kubernetes.add_toleration(exit_task, operator="Exists")
        kubernetes.add_pod_annotation(exit_task, "example.com/critical", "true")
        # rule importer-by-name: the SDK drops it, SPEC never selects an importer
        kubernetes.add_node_selector(raw, "pool", "io")
        # rule ingest-image
        kubernetes.add_toleration(load, key="dedicated", operator="Equal", value="ingest",
                                  effect="NoSchedule")
        kubernetes.add_node_selector(load, "pool", "io")

    return exit_handler_importer


POLICY = """\
# exit_handler_importer (kfp v2). Mirrors the kfp.kubernetes calls in
# testdata/pipelines/v2/exit_handler_importer.py: add_toleration + add_pod_label on every
# task including the importer (the SDK drops the importer's), add_toleration +
# add_pod_annotation on the exit task, add_node_selector on the importer (dropped) and on
# ingest, add_toleration on ingest.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: exit-handler-importer
spec:
  rules:
  - name: every-task
    tolerations:
    - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
    podLabels: {app.kubernetes.io/managed-by: kfsched}
  - name: exit-task-anywhere
    match:
      names: ["cleanup-and-notify"]
    tolerations:
    - {operator: Exists}
    podAnnotations: {example.com/critical: "true"}
  - name: importer-by-name
    match:
      names: ["importer", "exec-importer"]   # an importer is not a component: no match
    nodeSelector: {pool: io}
  - name: ingest-image
    match:
      images: ["gcr.io/*"]
    tolerations:
    - {key: dedicated, operator: Equal, value: ingest, effect: NoSchedule}
    nodeSelector: {pool: io}
"""

NOTES = """\
# v2 / exit_handler_importer

`cleanup-and-notify` is the exit task of `dsl.ExitHandler` (a root task with
`triggerPolicy.strategy: ALL_UPSTREAM_TASKS_COMPLETED`); inside the handler group
`exit-handler-1` sit the importer task `importer` (executor `exec-importer`, an `importer:`
executor, not a container) and two container tasks, `validate-dataset` and `ingest`.

- `every-task` (no `match`): the three container tasks, not the importer, get
  `node.kubernetes.io/unreachable` Exists NoExecute `tolerationSeconds: '300'` and the pod
  label `app.kubernetes.io/managed-by=kfsched`. The source makes the same calls on the
  importer too; kfp drops them (no `exec-importer` entry in the platform document).
- `exit-task-anywhere`: the exit task also tolerates everything (`- operator: Exists`) and
  gets the annotation `example.com/critical: 'true'`.
- `importer-by-name` matches nothing: importers are skipped, whatever their name.
- `ingest-image` (`gcr.io/*`): ingest gets `dedicated=ingest:NoSchedule` and `pool=io`.
"""
