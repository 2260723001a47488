"""KFP v1: the same components reused many times; selection by template/task name,
display name (task_display_name annotation), component name (component_spec), pipeline
name and kind; pod labels/annotations; rules that match nothing. Base of the Argo kind
variants (WorkflowTemplate, ClusterWorkflowTemplate, CronWorkflow)."""
from kfp import dsl
from kfp.components import create_component_from_func

from _common import PY_IMAGE, affinity, node_affinity, req, term, tol


def train_model(shard: int, learning_rate: float) -> float:
    return learning_rate * shard


def publish_model(score: float, target: str) -> str:
    return f"{target}:{score}"


def summarize(a: float, b: float, c: float) -> str:
    return f"{a} {b} {c}"


train_op = create_component_from_func(train_model, base_image=PY_IMAGE)
publish_op = create_component_from_func(publish_model, base_image=PY_IMAGE)
summarize_op = create_component_from_func(summarize, base_image=PY_IMAGE)


def pipeline(scheduled: bool):
    @dsl.pipeline(name="reused-components",
                  description="Six shards of one trainer, three publishers, one summary.")
    def reused_components(learning_rate: float = 0.01):
        shards = []
        for i in range(1, 7):
            t = train_op(i, learning_rate)
            if i <= 4:
                t.set_display_name(f"Train shard {i}")
            shards.append(t)
        pubs = [publish_op(s.output, target).set_display_name(display)
                for s, (target, display) in zip(shards, [("staging", "Publish to staging"),
                                                         ("prod", "Publish to prod"),
                                                         ("dr-site", "Publish to DR site")])]
        summary = summarize_op(shards[0].output, shards[1].output, shards[2].output)
        if not scheduled:
            return
        # rule gpu-shards: display names "Train shard [1-3]" minus train-model-2
        for t in (shards[0], shards[2]):
            t.add_toleration(tol("nvidia.com/gpu", "Exists", effect="NoSchedule"))
            t.add_node_selector_constraint("cloud.example.com/accelerator", "nvidia-l4")
        # rule late-shards-by-name: train-model-4 .. train-model-6
        for t in shards[3:]:
            t.add_toleration(tol("cloud.example.com/spot", "Equal", "true", "PreferNoSchedule"))
            t.add_node_selector_constraint("lifecycle", "spot")
        # rule publishers-by-component-name: component_spec name "Publish model"
        for p in pubs:
            p.add_affinity(affinity(node=node_affinity(required=[
                term(req("topology.kubernetes.io/zone", "In", ["us-east1-b", "us-east1-c"]))])))

        # rule prod-annotation (display name): two annotations, in the policy's order
        pubs[1].add_pod_annotation("example.com/change-ticket", "CHG-1234")
        pubs[1].add_pod_annotation("example.com/approved-by", "release-board")
        # rule part-of-label (every template), then rule gpu-class-label (the GPU shards):
        # each op's calls in rule order
        for op in shards + pubs + [summary]:
            op.add_pod_label("app.kubernetes.io/part-of", "reused-components")
        for t in (shards[0], shards[2]):
            t.add_pod_label("example.com/accelerator-class", "gpu")
        # rules no-such-task / only-v2 / other-pipeline: match nothing

    return reused_components


POLICY = """\
# reused_components (kfp v1). Mirrors the calls in
# testdata/pipelines/v1/reused_components.py: op.add_toleration(V1Toleration) and
# op.add_node_selector_constraint on the GPU and spot shards, op.add_affinity(V1Affinity)
# on the three publishers, op.add_pod_annotation on publish-model-2 and
# op.add_pod_label on every template and on the GPU shards.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: reused-components
spec:
  rules:
  - name: gpu-shards
    match:
      names: ["Train shard [1-3]"]       # pipelines.kubeflow.org/task_display_name
    exclude:
      names: ["train-model-2"]           # template / DAG task name
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
    nodeSelector: {cloud.example.com/accelerator: nvidia-l4}
  - name: late-shards-by-name
    match:
      names: ["train-model-[4-6]"]
    tolerations:
    - {key: cloud.example.com/spot, operator: Equal, value: "true", effect: PreferNoSchedule}
    nodeSelector: {lifecycle: spot}
  - name: publishers-by-component-name
    match:
      names: ["Publish model"]           # "name" inside pipelines.kubeflow.org/component_spec
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b, us-east1-c]}
  - name: prod-annotation
    match:
      names: ["Publish to prod"]
    podAnnotations: {example.com/change-ticket: CHG-1234, example.com/approved-by: release-board}
  - name: part-of-label
    match:
      pipelines: ["reused-*"]
      kinds: ["Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow"]
    podLabels: {app.kubernetes.io/part-of: reused-components}
  - name: gpu-class-label
    match:
      names: ["Train shard [1-3]"]
    exclude:
      names: ["train-model-2"]
    podLabels: {example.com/accelerator-class: gpu}
  - name: no-such-task
    match:
      names: ["train-model-7", "Train shard 5"]
    tolerations:
    - {key: never, operator: Exists}
  - name: only-v2
    match:
      kinds: ["PipelineSpec"]
    podLabels: {never: "true"}
  - name: other-pipeline
    match:
      pipelines: ["nightly-*"]
    nodeSelector: {never: "true"}
"""

NOTES = """\
# v1 / reused_components

kfp 1.8.22 turns each task into its own template: `train-model` … `train-model-6`
(component `Train model`; display names `Train shard 1` … `Train shard 4` on the first
four), `publish-model` … `publish-model-3` (component `Publish model`, display names
`Publish to staging|prod|DR site`), `summarize`; DAG task names equal template names.

- `gpu-shards`: display-name glob minus the exclude `train-model-2` → train-model,
  train-model-3: `nvidia.com/gpu` Exists NoSchedule, nodeSelector
  `cloud.example.com/accelerator: nvidia-l4`.
- `late-shards-by-name`: train-model-4, -5, -6: `cloud.example.com/spot=true`
  PreferNoSchedule (a block mapping: kfp forces `"true"` to double quotes, which makes
  PyYAML write that toleration in block style), `lifecycle: spot`.
- `publishers-by-component-name`: the component_spec name `Publish model` selects all
  three publishers: one required zone term.
- `prod-annotation`: publish-model-2 (display name `Publish to prod`): two annotations, in
  the policy's order (not sorted: `change-ticket` before `approved-by`), at the START of
  the template's flow-style `annotations: {…}`, before kfp's own
  `pipelines.kubeflow.org/*` entries (kfp adds those at template time, after every user
  call). The flow map holds the long component_spec JSON, so PyYAML's 80-column wrapping
  of the whole map moves: every continuation line of that map changes.
- `part-of-label` (`pipelines` AND `kinds` over all four Argo kinds): every template gets
  pod label `app.kubernetes.io/part-of`, before kfp's labels (`kfp_sdk_version`,
  `pipeline-sdk-type`, `enable_caching`).
- `gpu-class-label`: train-model and train-model-3 also get
  `example.com/accelerator-class`, after `part-of` (an earlier rule) and still before
  kfp's labels.
- `no-such-task`, `only-v2` (`kinds: [PipelineSpec]`), `other-pipeline` match nothing.

New template fields sit in kfp's template key order: after `outputs`, before `metadata`
(`nodeSelector`, `tolerations`, `affinity`). Pod labels and annotations are plain
`op.add_pod_label` / `op.add_pod_annotation` calls, made in rule order.
"""

VARIANTS = ("crlf", "bom", "workflowtemplate", "clusterworkflowtemplate", "cronworkflow")
