"""PipelineVersion whose plain.yaml already has `spec.platformSpec`: secrets as env and as
a volume, a PVC mount, a config map, an image pull policy, an existing toleration; the
scheduling keys go into the existing executor entries at their sorted places, and a new
executor entry is created between existing ones."""
from kfp import dsl, kubernetes

from _common import PY

OPTIONS = {}


@dsl.component(base_image=PY)
def load_data(table: str) -> str:
    return table


@dsl.component(base_image=PY)
def build_features(table: str) -> str:
    return table + "-features"


@dsl.component(base_image="pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime")
def train_model(features: str) -> str:
    return features + "-model"


@dsl.component(base_image=PY)
def upload_model(model: str):
    print(model)


def pipeline(scheduled: bool):
    @dsl.pipeline(name="pv-platform-config")
    def pv_platform_config(table: str = "events"):
        ld = load_data(table=table)
        bf = build_features(table=ld.output)
        tr = train_model(features=bf.output)
        up = upload_model(model=tr.output)

        # the pipeline's own platform config, in both builds
        kubernetes.use_secret_as_env(ld, secret_name="warehouse-creds",
                                     secret_key_to_env={"password": "WAREHOUSE_PASSWORD"})
        kubernetes.set_image_pull_policy(ld, "IfNotPresent")
        kubernetes.mount_pvc(tr, pvc_name="training-cache", mount_path="/cache")
        kubernetes.use_config_map_as_env(tr, config_map_name="train-settings",
                                         config_map_key_to_env={"lr": "LEARNING_RATE"})
        kubernetes.add_toleration(tr, key="nvidia.com/gpu", operator="Exists",
                                  effect="NoSchedule")
        kubernetes.use_secret_as_volume(up, secret_name="registry-creds",
                                        mount_path="/var/run/registry")

        if not scheduled:
            return
        # rule gpu (train-model): its toleration exists already, the selector is new
        kubernetes.add_node_selector(tr, "cloud.example.com/accelerator", "nvidia-l4")
        # rule data-zone (load-data, build-features, upload-model)
        for t in (ld, bf, up):
            kubernetes.add_node_affinity(t, match_expressions=[
                {"key": "topology.kubernetes.io/zone", "operator": "In",
                 "values": ["europe-west4-a"]}])
        # rule spot-ok (every task)
        for t in (ld, bf, tr, up):
            kubernetes.add_toleration(t, key="cloud.example.com/spot", operator="Exists",
                                      effect="NoSchedule")
        # rule owner (upload-model)
        kubernetes.add_pod_label(up, "example.com/owner", "mlops")

    return pv_platform_config


POLICY = """\
# pv/platform_config (KFP PipelineVersion). Mirrors the kfp.kubernetes scheduling calls
# that testdata/pipelines/pv/platform_config.py adds in the scheduled build (the secret,
# PVC, config map, pull policy and first toleration are in both builds).
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: pv-platform-config
spec:
  rules:
  - name: gpu
    match:
      names: ["train-model"]
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
    nodeSelector: {cloud.example.com/accelerator: nvidia-l4}
  - name: data-zone
    match:
      names: ["load-data", "build-features", "upload-model"]
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [europe-west4-a]}
  - name: spot-ok
    tolerations:
    - {key: cloud.example.com/spot, operator: Exists, effect: NoSchedule}
  - name: owner
    match:
      names: ["upload-model"]
    podLabels: {example.com/owner: mlops}
"""

NOTES = """\
# pv/platform_config

plain.yaml already has `spec.platformSpec` (the last key of `spec`): executor entries
`exec-load-data` (`imagePullPolicy`, `secretAsEnv`), `exec-train-model` (`configMapAsEnv`,
`pvcMount`, one toleration) and `exec-upload-model` (`secretAsVolume`); `exec-build-features`
has none. Entries are sorted, and so are the keys inside them.

- `gpu` (train-model): its toleration is already there (no change); `nodeSelector` is a new
  key, sorted between `configMapAsEnv` and `pvcMount`.
- `data-zone` (load-data, build-features, upload-model): a required term. In exec-load-data
  `nodeAffinity` goes between `imagePullPolicy` and `secretAsEnv`; in exec-upload-model it
  becomes the first key, before `secretAsVolume`. exec-build-features gets a NEW executor
  entry, the FIRST of `executors` (sorted: before exec-load-data).
- `spot-ok` (no match): every task. In exec-train-model the toleration is appended after
  the existing one; exec-load-data and exec-upload-model get a new `tolerations` key, their
  last (after `secretAsEnv` / `secretAsVolume`).
- `owner` (upload-model): `podMetadata.labels` sorted between `nodeAffinity` and
  `secretAsVolume`.

The pipeline's own entries (secret, PVC, config map, pull policy) are unchanged.
"""
