"""KFP v1: dsl.ExitHandler. The exit template is reached only through `spec.onExit`
(no DAG task calls it), so its only names are its template name, display name and
component name; a rule without `match` still selects it."""
from kfp import dsl
from kfp.components import create_component_from_func

from _common import PY_IMAGE, affinity, node_affinity, req, term, tol


def download(url: str) -> str:
    return url.rsplit("/", 1)[-1]


def compute(name: str) -> int:
    return len(name)


def cleanup(channel: str):
    print("cleanup, notify", channel)


download_op = create_component_from_func(download, base_image=PY_IMAGE)
compute_op = create_component_from_func(compute, base_image="gcr.io/example-project/compute:7")
cleanup_op = create_component_from_func(cleanup, base_image=PY_IMAGE)


def pipeline(scheduled: bool):
    @dsl.pipeline(name="exit-handler", description="Download and compute, always clean up.")
    def exit_handler(url: str = "https://example.com/data.csv", channel: str = "ml-alerts"):
        exit_task = cleanup_op(channel).set_display_name("Cleanup and notify")
        with dsl.ExitHandler(exit_task):
            d = download_op(url)
            c = compute_op(d.output)

        if not scheduled:
            return
        # rule all-tolerate-unreachable (no match): every pod template, the exit one too
        for op in (exit_task, d, c):
            op.add_toleration(tol("node.kubernetes.io/unreachable", "Exists",
                                  effect="NoExecute", seconds=30))
        # rule exit-template-by-name (template name cleanup)
        exit_task.add_node_selector_constraint("kubernetes.io/os", "linux")
        exit_task.add_affinity(affinity(node=node_affinity(preferred=[
            (80, term(req("node-role.example.com/system", "Exists")))])))
        # rule exit-by-display-name: the exit op's annotation and label
        exit_task.add_pod_label("example.com/role", "exit-handler")
        exit_task.add_pod_annotation("example.com/critical", "exit")
        # rule team-label (no match): every op, the exit op too
        for op in (exit_task, d, c):
            op.add_pod_label("team", "data-eng")
        # rule handler-subtree (exit-handler-1/*)
        for op in (d, c):
            op.add_node_selector_constraint("pool", "batch")

    return exit_handler


POLICY = """\
# exit_handler (kfp v1). Mirrors the calls in testdata/pipelines/v1/exit_handler.py:
# op.add_toleration on every op including the exit op; add_node_selector_constraint and
# add_affinity on the exit op; add_pod_label + add_pod_annotation on it;
# add_pod_label on every op; and add_node_selector_constraint on the two ops inside the
# handler.
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: exit-handler
spec:
  rules:
  - name: all-tolerate-unreachable
    tolerations:
    - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 30}
  - name: exit-template-by-name
    match:
      names: ["cleanup"]
    nodeSelector: {kubernetes.io/os: linux}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 80
          preference:
            matchExpressions:
            - {key: node-role.example.com/system, operator: Exists}
  - name: exit-by-display-name
    match:
      names: ["Cleanup and notify"]
    podLabels: {example.com/role: exit-handler}
    podAnnotations: {example.com/critical: exit}
  - name: team-label
    podLabels: {team: data-eng}
  - name: handler-subtree
    match:
      names: ["exit-handler-1/*"]
    nodeSelector: {pool: batch}
  - name: exit-has-no-path
    match:
      names: ["exit-handler/cleanup", "*/cleanup"]   # onExit templates have no path
    nodeSelector: {never: "true"}
"""

NOTES = """\
# v1 / exit_handler

`dsl.ExitHandler(cleanup)`: the root DAG `exit-handler` has one task `exit-handler-1`
(a DAG) with `download` and `compute`; `spec.onExit: cleanup` names the exit template,
which no DAG task calls (display name `Cleanup and notify`, component `Cleanup`).

- `all-tolerate-unreachable` (no `match`): the three container templates, cleanup
  included: `node.kubernetes.io/unreachable` Exists NoExecute `tolerationSeconds: 30`.
- `exit-template-by-name` (`cleanup`): nodeSelector `kubernetes.io/os: linux` and a
  preferred term (weight 80, `Exists`, so a flow-style `{key: …, operator: Exists}`).
- `exit-by-display-name`: on cleanup, label `example.com/role` and annotation
  `example.com/critical`, both at the START of their maps, before kfp's
  `pipelines.kubeflow.org/*` keys. The annotation goes into the flow-style
  `annotations: {…}` that holds the wrapped component_spec JSON, so the whole map is
  re-wrapped at 80 columns. cleanup has a display name, so `annotations` already comes
  before `labels` in its `metadata`.
- `team-label` (no `match`): label `team` on all three, cleanup included; on cleanup it
  goes after `example.com/role` (an earlier rule), still before kfp's labels.
- `handler-subtree` (`exit-handler-1/*`): download and compute.
- `exit-has-no-path` matches nothing: a template reached only through `onExit` has no
  path name (SPEC §2).
"""
