"""KFP v1: resource templates (dsl.VolumeOp, dsl.ResourceOp) next to a raw
dsl.ContainerOp and a component loaded from text; resource templates have no image and no
component_spec, so only names select them."""
from kfp import dsl
from kfp.components import load_component_from_text

from _common import affinity, node_affinity, req, term, tol

ECHO_TEXT = """\
name: Echo text
description: Prints its input.
inputs:
- {name: text, type: String}
implementation:
  container:
    image: docker.io/library/alpine:3.20
    command: [sh, -c, 'echo "$0"', {inputValue: text}]
"""
echo_op = load_component_from_text(ECHO_TEXT)

JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"generateName": "train-job-"},
    "spec": {
        "backoffLimit": 0,
        "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "registry.example.com/team/trainer:1.4",
                            "args": ["--epochs", "3"]}]}},
    },
}


def pipeline(scheduled: bool):
    @dsl.pipeline(name="resource-ops", description="A volume, a Job resource, raw containers.")
    def resource_ops():
        vop = dsl.VolumeOp(name="create-scratch", resource_name="scratch", size="10Gi",
                           modes=dsl.VOLUME_MODE_RWO)
        fetch = dsl.ContainerOp(name="fetch-data", image="busybox:1.36",
                                command=["sh", "-c", "wget -O /data/in.csv https://example.com/x"],
                                pvolumes={"/data": vop.volume})
        job = dsl.ResourceOp(name="submit-job", k8s_resource=JOB, action="create",
                             success_condition="status.succeeded > 0",
                             failure_condition="status.failed > 0").after(fetch)
        say = echo_op("done").set_display_name("Announce").after(job)

        if not scheduled:
            return
        # rule resource-templates (names create-scratch, submit-job)
        for op in (vop, job):
            op.add_toleration(tol("node-role.kubernetes.io/control-plane", "Exists",
                                  effect="NoSchedule"))
            op.add_node_selector_constraint("kubernetes.io/os", "linux")
        # rule busybox
        fetch.add_toleration(tol("dedicated", "Equal", "io", "NoSchedule"))
        fetch.add_affinity(affinity(node=node_affinity(required=[
            term(req("example.com/network", "In", ["10g", "25g"]))])))
        # rule busybox also annotates the raw ContainerOp (no display name)
        fetch.add_pod_annotation("example.com/network-heavy", "true")
        # rule text-component (component_spec name "Echo text")
        say.add_pod_annotation("example.com/announce", "slack")
        # rule every-pod
        for op in (vop, fetch, job, say):
            op.add_pod_label("app.kubernetes.io/managed-by", "kfsched")

    return resource_ops


POLICY = """\
# resource_ops (kfp v1). Mirrors the calls in testdata/pipelines/v1/resource_ops.py:
# op.add_toleration + add_node_selector_constraint on the VolumeOp and the ResourceOp,
# add_toleration + add_affinity + add_pod_annotation on the raw ContainerOp,
# add_pod_annotation on the text component and add_pod_label on every op.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: resource-ops
spec:
  rules:
  - name: resource-templates
    match:
      names: ["create-scratch", "submit-job"]
    tolerations:
    - {key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}
    nodeSelector: {kubernetes.io/os: linux}
  - name: busybox
    match:
      images: ["busybox:*"]
    tolerations:
    - {key: dedicated, operator: Equal, value: io, effect: NoSchedule}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: example.com/network, operator: In, values: [10g, 25g]}
    podAnnotations: {example.com/network-heavy: "true"}
  - name: text-component
    match:
      names: ["Echo text"]
    podAnnotations: {example.com/announce: slack}
  - name: every-pod
    podLabels: {app.kubernetes.io/managed-by: kfsched}
  - name: job-image-is-not-main
    match:
      images: ["registry.example.com/*"]   # only inside the Job manifest: not a main image
    nodeSelector: {never: "true"}
"""

NOTES = """\
# v1 / resource_ops

Four pod-creating templates: `create-scratch` (a `resource:` template from `dsl.VolumeOp`,
a PVC), `submit-job` (a `resource:` template from `dsl.ResourceOp`, a batch/v1 Job),
`fetch-data` (a raw `dsl.ContainerOp`, image `busybox:1.36`, no component_spec), and
`echo-text` (loaded from component text: component name `Echo text`, display name
`Announce`, a `component_ref` digest annotation).

- `resource-templates` (by name): both resource templates get a control-plane toleration
  and `kubernetes.io/os: linux`; on a resource template the fields go after `outputs`,
  exactly as on containers.
- `busybox` (image): fetch-data, toleration + one required term, and an annotation.
  fetch-data is a raw ContainerOp without display name: in plain.yaml its `metadata` has
  only `labels` (no kfp annotation at all); kfp writes a template's `annotations` BEFORE
  its `labels` when the op has an annotation before template time, so expected.yaml gets
  a new `annotations` entry as the FIRST key of `metadata`, before `labels`. It is a
  block map: kfp's dumper forces `"true"` into double quotes, and PyYAML writes a map
  with a forced-style scalar in block style.
- `text-component` (component name): echo-text's annotation, first in its annotations
  map (before kfp's `task_display_name`, `component_spec`, `component_ref`).
- `every-pod` (no `match`): all four, resource templates included, get the pod label, as
  the first key of `labels`, before kfp's `kfp_sdk_version` / `pipeline-sdk-type` /
  `enable_caching`.
- `job-image-is-not-main` matches nothing: the trainer image only appears inside the
  Job manifest string, which is not a main container image of the workflow.
"""
