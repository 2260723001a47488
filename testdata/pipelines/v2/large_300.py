"""KFP v2: a 300-task pipeline (50 shards x 6 lightweight components), every task
scheduled; for size and speed tests (compare the corpus note's p10_large_300)."""
from kfp import dsl, kubernetes

PY = "python:3.11-slim"
TRAIN_IMAGE = "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"
SHARDS = 50


@dsl.component(base_image=PY)
def ingest(shard: int) -> str:
    return f"s3://example/raw/{shard}"


@dsl.component(base_image=PY)
def validate(uri: str) -> str:
    if not uri.startswith("s3://"):
        raise ValueError(uri)
    return uri


@dsl.component(base_image=PY)
def featurize(uri: str, window: int) -> str:
    return f"{uri}/features-{window}"


@dsl.component(base_image=TRAIN_IMAGE)
def train(features: str, epochs: int) -> float:
    return len(features) / (epochs + 1)


@dsl.component(base_image=PY)
def evaluate(score: float) -> bool:
    return score > 0.5


@dsl.component(base_image=PY)
def register(ok: bool, shard: int):
    print(shard, ok)


def pipeline(scheduled: bool):
    @dsl.pipeline(name="large-300", description="50 shards x 6 steps = 300 tasks.")
    def large_300(epochs: int = 5, window: int = 24):
        for shard in range(1, SHARDS + 1):
            i = ingest(shard=shard)
            v = validate(uri=i.output)
            f = featurize(uri=v.output, window=window)
            t = train(features=f.output, epochs=epochs)
            if shard % 10 == 0:
                t.set_display_name(f"Train checkpoint shard {shard}")
            ev = evaluate(score=t.output)
            r = register(ok=ev.output, shard=shard)
            if not scheduled:
                continue
            # rule all-batch: every task
            for task in (i, v, f, t, ev, r):
                kubernetes.add_toleration(task, key="workload", operator="Equal",
                                          value="batch", effect="NoSchedule")
            # rule featurize-cpu-pool
            kubernetes.add_node_selector(f, "pool", "cpu-highmem")
            # rule gpu-train (image)
            kubernetes.add_toleration(t, key="nvidia.com/gpu", operator="Exists",
                                      effect="NoSchedule")
            kubernetes.add_node_affinity(t, match_expressions=[
                {"key": "nvidia.com/gpu.product", "operator": "In",
                 "values": ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"]}])
            # rule checkpoint-shards (display name glob)
            if shard % 10 == 0:
                kubernetes.add_pod_annotation(t, "example.com/checkpoint", "true")
                kubernetes.add_node_affinity(t, match_expressions=[
                    {"key": "example.com/local-nvme", "operator": "Exists"}], weight=60)
            # rule register-label (names register*)
            kubernetes.add_pod_label(r, "stage", "registry")

    return large_300


POLICY = """\
# large_300 (kfp v2). Mirrors the kfp.kubernetes calls made in the shard loop of
# testdata/pipelines/v2/large_300.py.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: large-300
spec:
  rules:
  - name: all-batch
    tolerations:
    - {key: workload, operator: Equal, value: batch, effect: NoSchedule}
  - name: featurize-cpu-pool
    match:
      names: ["featurize*"]
    nodeSelector: {pool: cpu-highmem}
  - name: gpu-train
    match:
      images: ["pytorch/pytorch:*"]
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-A100-SXM4-80GB, NVIDIA-H100-80GB-HBM3]}
  - name: checkpoint-shards
    match:
      names: ["Train checkpoint shard *"]
    podAnnotations: {example.com/checkpoint: "true"}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 60
          preference:
            matchExpressions:
            - {key: example.com/local-nvme, operator: Exists}
  - name: register-label
    match:
      names: ["register*"]
    podLabels: {stage: registry}
"""

NOTES = """\
# v2 / large_300

300 tasks: 50 shards of ingest → validate → featurize → train → evaluate → register
(task keys `ingest`, `ingest-2` … `ingest-50`, and so on). Every task is scheduled, so the
platform document has 300 executor entries. Use it for throughput and for "many edits in
one file".

- `all-batch` (no match): `workload=batch:NoSchedule` on all 300.
- `featurize-cpu-pool` (`featurize*`): 50 nodeSelectors.
- `gpu-train` (image `pytorch/pytorch:*`): the 50 train tasks get a second toleration and
  a required GPU term.
- `checkpoint-shards` (display names `Train checkpoint shard 10|20|…|50`): annotation
  `example.com/checkpoint: 'true'` and a preferred term (weight 60.0) after the required one.
- `register-label` (`register*`): pod label on the 50 register tasks.
"""
