"""KFP v2: the same components reused many times; selection by task key, display name,
component name, executor label, pipeline name and kind; rules that match nothing."""
from kfp import dsl, kubernetes

PY = "python:3.11-slim"


@dsl.component(base_image=PY)
def train_model(shard: int, learning_rate: float) -> float:
    return learning_rate * shard


@dsl.component(base_image=PY)
def publish_model(score: float, target: str) -> str:
    return f"{target}:{score}"


@dsl.component(base_image=PY)
def summarize(a: float, b: float, c: float) -> str:
    return f"{a} {b} {c}"


def pipeline(scheduled: bool):
    @dsl.pipeline(name="reused-components",
                  description="Six shards of one trainer, three publishers, one summary.")
    def reused_components(learning_rate: float = 0.01, release: str = "2024.05"):
        shards = []
        for i in range(1, 7):
            t = train_model(shard=i, learning_rate=learning_rate)
            if i <= 4:
                t.set_display_name(f"Train shard {i}")
            shards.append(t)
        targets = [("staging", "Publish to staging"), ("prod", "Publish to prod"),
                   ("dr-site", "Publish to DR site")]
        pubs = []
        for (target, display), shard in zip(targets, shards):
            pubs.append(publish_model(score=shard.output, target=target).set_display_name(display))
        summary = summarize(a=shards[0].output, b=shards[1].output, c=shards[2].output)

        if not scheduled:
            return
        everything = shards + pubs + [summary]
        # rule gpu-shards: display names "Train shard [1-3]" minus train-model-2
        for t in (shards[0], shards[2]):
            kubernetes.add_toleration(t, key="nvidia.com/gpu", operator="Exists",
                                      effect="NoSchedule")
            kubernetes.add_node_selector(t, "cloud.example.com/accelerator", "nvidia-l4")
        # rule late-shards-by-key: task keys train-model-4 .. train-model-6
        for t in shards[3:]:
            kubernetes.add_toleration(t, key="cloud.example.com/spot", operator="Equal",
                                      value="true", effect="PreferNoSchedule")
            kubernetes.add_node_selector(t, "lifecycle", "spot")
        # rule prod-by-component-name: comp-publish-model-2 (display name "Publish to prod")
        kubernetes.add_node_selector(pubs[1], "topology.kubernetes.io/zone", "us-east1-b")
        kubernetes.add_pod_annotation(pubs[1], "example.com/change-ticket", "CHG-1234")
        # rule dr-by-executor-label: exec-publish-model-3
        kubernetes.add_pod_label(pubs[2], "tier", "disaster-recovery")
        # rule part-of-label: pipelines reused-* AND kinds PipelineSpec -> every task
        for t in everything:
            kubernetes.add_pod_label(t, "app.kubernetes.io/part-of", "reused-components")
        # rule shard-2-overrides: train-model-2 via its display name; the nodeSelector value
        # replaces nothing (train-model-2 had no selector), the label is new
        kubernetes.add_node_selector(shards[1], "cloud.example.com/accelerator", "nvidia-t4")
        # rules no-such-task / other-pipeline / only-argo: match nothing

    return reused_components


POLICY = """\
# reused_components (kfp v2). Mirrors kfp.kubernetes calls in
# testdata/pipelines/v2/reused_components.py:
#   add_toleration + add_node_selector on train-model and train-model-3 (gpu-shards),
#   on train-model-4..6 (late-shards-by-key); add_node_selector + add_pod_annotation on
#   publish-model-2; add_pod_label on publish-model-3 and (part-of) on every task;
#   add_node_selector on train-model-2.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: reused-components
spec:
  rules:
  - name: gpu-shards
    match:
      names: ["Train shard [1-3]"]       # taskInfo.name (display name)
    exclude:
      names: ["train-model-2"]           # task key
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
    nodeSelector: {cloud.example.com/accelerator: nvidia-l4}
  - name: late-shards-by-key
    match:
      names: ["train-model-[4-6]"]
    tolerations:
    - {key: cloud.example.com/spot, operator: Equal, value: "true", effect: PreferNoSchedule}
    nodeSelector: {lifecycle: spot}
  - name: prod-by-component-name
    match:
      names: ["comp-publish-model-2"]    # components.<name>
    nodeSelector: {topology.kubernetes.io/zone: us-east1-b}
    podAnnotations: {example.com/change-ticket: CHG-1234}
  - name: dr-by-executor-label
    match:
      names: ["exec-publish-model-3"]    # deploymentSpec.executors.<label>
    podLabels: {tier: disaster-recovery}
  - name: part-of-label
    match:
      pipelines: ["reused-*"]
      kinds: ["PipelineSpec"]
    podLabels: {app.kubernetes.io/part-of: reused-components}
  - name: shard-2-accelerator
    match:
      names: ["Train shard 2"]
    nodeSelector: {cloud.example.com/accelerator: nvidia-t4}
  - name: no-such-task
    match:
      names: ["train-model-7", "Train shard 5"]   # no 7th shard; shard 5 has no display name
    tolerations:
    - {key: never, operator: Exists}
  - name: other-pipeline
    match:
      pipelines: ["nightly-*"]
    nodeSelector: {never: "true"}
  - name: only-argo
    match:
      kinds: ["Workflow", "CronWorkflow"]
    podLabels: {never: "true"}
"""

NOTES = """\
# v2 / reused_components

One component backs six tasks (`train-model` … `train-model-6`, display names
`Train shard 1` … `Train shard 4` on the first four), another three (`publish-model` …
`publish-model-3`, display names `Publish to staging|prod|DR site`), plus `summarize`.
kfp 2.17.3 gives every task its own `comp-…` and `exec-…`, so per-task config is per executor.

- `gpu-shards`: display-name glob `Train shard [1-3]` minus the exclude `train-model-2`
  (task key) → exec-train-model and exec-train-model-3: `nvidia.com/gpu` Exists NoSchedule,
  nodeSelector `cloud.example.com/accelerator=nvidia-l4`.
- `late-shards-by-key`: task-key glob `train-model-[4-6]` → -4, -5, -6 (two of them have no
  display name): `cloud.example.com/spot=true:PreferNoSchedule`, `lifecycle=spot`.
- `prod-by-component-name`: component name `comp-publish-model-2` → nodeSelector zone and
  pod annotation `example.com/change-ticket`.
- `dr-by-executor-label`: executor label `exec-publish-model-3` → pod label `tier`.
- `part-of-label`: `pipelines: [reused-*]` AND `kinds: [PipelineSpec]` → all 10 tasks get
  pod label `app.kubernetes.io/part-of`.
- `shard-2-accelerator`: display name `Train shard 2` (the task gpu-shards excluded).
- `no-such-task`, `other-pipeline`, `only-argo` match nothing (explain must list them);
  nothing of theirs appears in expected.yaml.

Look at: expected.yaml is plain.yaml byte for byte, then `---` and the platform document,
executors in sorted order; `podMetadata` next to `nodeSelector` / `tolerations`.
"""

VARIANTS = ("crlf", "bom")

JSON = True

MANIFEST = True
