"""KFP v2: @dsl.container_component tasks with different images; selection by image globs
(where `*` crosses `/`), images AND names, and an image exclude."""
from kfp import dsl, kubernetes


@dsl.container_component
def stage_data(uri: str, out: dsl.OutputPath(str)):
    return dsl.ContainerSpec(image="docker.io/library/busybox:1.36",
                             command=["sh", "-c"],
                             args=["mkdir -p $(dirname $1) && echo $0 > $1", uri, out])


@dsl.container_component
def train_resnet(epochs: int):
    return dsl.ContainerSpec(image="pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
                             command=["python", "-m", "train"],
                             args=["--epochs", epochs, "--arch", "resnet50"])


@dsl.container_component
def export_onnx(opset: int):
    return dsl.ContainerSpec(image="pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
                             command=["python", "-m", "export"], args=["--opset", opset])


@dsl.container_component
def serve_smoke_test():
    return dsl.ContainerSpec(image="nvcr.io/nvidia/tritonserver:24.05-py3",
                             command=["tritonserver", "--model-repository=/models", "--exit-on-error"])


@dsl.container_component
def fine_tune(steps: int):
    return dsl.ContainerSpec(image="registry.example.com/team/trainer:1.4",
                             command=["trainer"], args=["--steps", steps])


@dsl.container_component
def scan_image():
    return dsl.ContainerSpec(
        image="ghcr.io/example/scanner@sha256:3f1a0c6b2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8",
        command=["scan", "--all"])


def pipeline(scheduled: bool):
    @dsl.pipeline(name="container-components",
                  description="Container components only, selected by image.")
    def container_components(epochs: int = 3, steps: int = 1000):
        stage = stage_data(uri="s3://example/raw")
        train = train_resnet(epochs=epochs).after(stage)
        export = export_onnx(opset=17).after(train)
        smoke = serve_smoke_test().after(export)
        tune = fine_tune(steps=steps).after(stage)
        scan = scan_image()

        if not scheduled:
            return
        # rule pytorch-gpu (images *pytorch/pytorch:*)
        for t in (train, export):
            kubernetes.add_toleration(t, key="nvidia.com/gpu", operator="Exists",
                                      effect="NoSchedule")
            kubernetes.add_node_affinity(t, match_expressions=[
                {"key": "nvidia.com/gpu.product", "operator": "In",
                 "values": ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"]}])
            kubernetes.add_node_selector(t, "cloud.example.com/accelerator-pool", "gpu")
        # rule nvcr (nvcr.io/*)
        kubernetes.add_toleration(smoke, key="nvidia.com/gpu", operator="Exists",
                                  effect="NoSchedule")
        kubernetes.add_node_selector(smoke, "cloud.example.com/accelerator-pool", "inference")
        # rule private-registry (registry.example.com/team/*:1.?)
        kubernetes.add_toleration(tune, key="dedicated", operator="Equal", value="training",
                                  effect="NoExecute", toleration_seconds=3600)
        kubernetes.add_node_selector(tune, "team", "ml-training")
        # rule pinned-digest (*@sha256:*)
        kubernetes.add_pod_annotation(scan, "example.com/pinned", "digest")
        # rule training-by-image-and-name: images pytorch AND names train-*
        kubernetes.add_pod_label(train, "role", "trainer")
        # rule not-gpu: every task whose image is not a GPU image
        for t in (stage, tune, scan):
            kubernetes.add_node_affinity(t, match_expressions=[
                {"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"}])

    return container_components


POLICY = """\
# container_components (kfp v2). Mirrors the kfp.kubernetes calls in
# testdata/pipelines/v2/container_components.py (the source selected the same tasks by
# hand): add_toleration / add_node_affinity / add_node_selector on the pytorch tasks,
# the triton task and the private-registry task; add_pod_annotation on the digest-pinned
# task; add_pod_label on train-resnet; add_node_affinity (DoesNotExist) on the others.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: container-components
spec:
  rules:
  - name: pytorch-gpu
    match:
      images: ["*pytorch/pytorch:*"]
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
    nodeSelector: {cloud.example.com/accelerator-pool: gpu}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-A100-SXM4-80GB, NVIDIA-H100-80GB-HBM3]}
  - name: nvcr
    match:
      images: ["nvcr.io/*"]              # * crosses '/' in images: nvcr.io/nvidia/tritonserver:24.05-py3
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
    nodeSelector: {cloud.example.com/accelerator-pool: inference}
  - name: private-registry
    match:
      images: ["registry.example.com/team/*:1.?"]
    tolerations:
    - {key: dedicated, operator: Equal, value: training, effect: NoExecute, tolerationSeconds: 3600}
    nodeSelector: {team: ml-training}
  - name: pinned-digest
    match:
      images: ["*@sha256:*"]
    podAnnotations: {example.com/pinned: digest}
  - name: training-by-image-and-name
    match:
      images: ["pytorch/*"]
      names: ["train-*"]                 # AND: export-onnx has the image but not the name
    podLabels: {role: trainer}
  - name: not-gpu
    exclude:
      images: ["*pytorch*", "nvcr.io/*"]
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: nvidia.com/gpu.present, operator: DoesNotExist}
  - name: python-images
    match:
      images: ["python:*"]               # no lightweight Python component here
    nodeSelector: {never: "true"}
"""

NOTES = """\
# v2 / container_components

Six `@dsl.container_component` tasks, chosen by image:
stage-data `docker.io/library/busybox:1.36`, train-resnet and export-onnx
`pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime`, serve-smoke-test
`nvcr.io/nvidia/tritonserver:24.05-py3`, fine-tune `registry.example.com/team/trainer:1.4`,
scan-image `ghcr.io/example/scanner@sha256:…`.

- `pytorch-gpu` (`*pytorch/pytorch:*`): train-resnet, export-onnx: GPU toleration,
  accelerator-pool nodeSelector, one required term `nvidia.com/gpu.product In [A100, H100]`.
- `nvcr` (`nvcr.io/*`; in `images` `*` also matches `/`): serve-smoke-test.
- `private-registry` (`registry.example.com/team/*:1.?`): fine-tune,
  `dedicated=training:NoExecute` with `tolerationSeconds: '3600'` (a quoted string in v2).
- `pinned-digest` (`*@sha256:*`): scan-image, pod annotation.
- `training-by-image-and-name`: `images` AND `names` → train-resnet only.
- `not-gpu` (no `match`, `exclude` by image): stage-data, fine-tune, scan-image get a
  required term `nvidia.com/gpu.present DoesNotExist` (no `values` key). On fine-tune it is
  written after the rule private-registry's entries, in rule order.
- `python-images` matches nothing.

Container components have no embedded Python source, so the file is short-lined.
"""
