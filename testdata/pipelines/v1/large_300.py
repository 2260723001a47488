"""KFP v1: a 300-template pipeline (50 shards x 6 lightweight components), every
template scheduled; for size and speed tests."""
from kfp import dsl
from kfp.components import create_component_from_func

from _common import PY_IMAGE, affinity, node_affinity, req, term, tol

TRAIN_IMAGE = "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"
SHARDS = 50


def ingest(shard: int) -> str:
    return f"s3://example/raw/{shard}"


def validate(uri: str) -> str:
    return uri


def featurize(uri: str, window: int) -> str:
    return f"{uri}/features-{window}"


def train(features: str, epochs: int) -> float:
    return len(features) / (epochs + 1)


def evaluate(score: float) -> str:
    return "ok" if score > 0.5 else "retry"


def register(verdict: str, shard: int):
    print(shard, verdict)


ingest_op = create_component_from_func(ingest, base_image=PY_IMAGE)
validate_op = create_component_from_func(validate, base_image=PY_IMAGE)
featurize_op = create_component_from_func(featurize, base_image=PY_IMAGE)
train_op = create_component_from_func(train, base_image=TRAIN_IMAGE)
evaluate_op = create_component_from_func(evaluate, base_image=PY_IMAGE)
register_op = create_component_from_func(register, base_image=PY_IMAGE)

GPU_TERM = term(req("nvidia.com/gpu.product", "In",
                    ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"]))


def pipeline(scheduled: bool):
    @dsl.pipeline(name="large-300", description="50 shards x 6 steps = 300 templates.")
    def large_300(epochs: int = 5, window: int = 24):
        for shard in range(1, SHARDS + 1):
            i = ingest_op(shard)
            v = validate_op(i.output)
            f = featurize_op(v.output, window)
            t = train_op(f.output, epochs)
            if shard % 10 == 0:
                t.set_display_name(f"Train checkpoint shard {shard}")
            ev = evaluate_op(t.output)
            r = register_op(ev.output, shard)
            if not scheduled:
                continue
            # rule all-batch: every template
            for op in (i, v, f, t, ev, r):
                op.add_toleration(tol("workload", "Equal", "batch", "NoSchedule"))
            # rule featurize-cpu-pool (names featurize*)
            f.add_node_selector_constraint("pool", "cpu-highmem")
            # rule gpu-train (image) and checkpoint-shards (display name): ONE add_affinity
            t.add_toleration(tol("nvidia.com/gpu", "Exists", effect="NoSchedule"))
            preferred = ([(60, term(req("example.com/local-nvme", "Exists")))]
                         if shard % 10 == 0 else None)
            t.add_affinity(affinity(node_affinity([GPU_TERM], preferred)))
            # rule register-spread (component name "Register")
            r.add_node_selector_constraint("kubernetes.io/os", "linux")

    return large_300


POLICY = """\
# large_300 (kfp v1). Mirrors the calls made in the shard loop of
# testdata/pipelines/v1/large_300.py (op.add_toleration, add_node_selector_constraint,
# one op.add_affinity per train template holding both the GPU and the checkpoint rule).
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
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 60
          preference:
            matchExpressions:
            - {key: example.com/local-nvme, operator: Exists}
  - name: register-by-component
    match:
      names: ["Register"]
    nodeSelector: {kubernetes.io/os: linux}
"""

NOTES = """\
# v1 / large_300

300 container templates (+ the root DAG): 50 shards of ingest → validate → featurize →
train → evaluate → register, templates `ingest`, `ingest-2` … `ingest-50` and so on
(sorted by name in the file: `ingest, ingest-10, …, ingest-19, ingest-2, …`). Every
template is scheduled. Use it for throughput and for "many edits in one file".

- `all-batch` (no match): `workload=batch:NoSchedule` on all 300.
- `featurize-cpu-pool` (`featurize*`): 50 nodeSelectors.
- `gpu-train` (image `pytorch/pytorch:*`): the 50 train templates get a second toleration
  and a required GPU term.
- `checkpoint-shards` (display names `Train checkpoint shard 10|20|…|50`): a preferred
  term, which kfp writes before the required one (`preferred…` first).
- `register-by-component` (component name `Register`): 50 nodeSelectors.
"""
