#!/usr/bin/env bash
# KFP v1 with mikefarah yq v4: the large_300 policy as one yq expression.
set -euo pipefail
yq=$1; src=$2; dst=$3
"$yq" eval '
  (.spec.templates[] | select(has("container"))).tolerations += [{"effect": "NoSchedule", "key": "workload", "operator": "Equal", "value": "batch"}]
  | (.spec.templates[] | select(has("container") and (.name | test("^featurize")))).nodeSelector.pool = "cpu-highmem"
  | (.spec.templates[] | select(has("container") and ((.metadata.annotations["pipelines.kubeflow.org/component_spec"] // "{}") | from_json | .name) == "Register")).nodeSelector["kubernetes.io/os"] = "linux"
  | (.spec.templates[] | select(has("container") and (.container.image | test("^pytorch/pytorch:")))) |= (
      .tolerations += [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}]
      | .affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms = [{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"]}]}])
  | (.spec.templates[] | select(has("container") and ((.metadata.annotations["pipelines.kubeflow.org/task_display_name"] // "") | test("^Train checkpoint shard ")))).affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution = [{"preference": {"matchExpressions": [{"key": "example.com/local-nvme", "operator": "Exists"}]}, "weight": 60}]
' "$src" > "$dst"
