"""KFP v2: every toleration shape, one task per variant (selected by display name), plus
one task that collects all of them through several rules (order and de-duplication)."""
from kfp import dsl, kubernetes

PY = "python:3.11-slim"

# (variant, toleration kwargs for kfp.kubernetes.add_toleration)
VARIANTS_TOL = [
    ("equal-noschedule", dict(key="dedicated", operator="Equal", value="ml", effect="NoSchedule")),
    ("exists-no-key", dict(operator="Exists")),
    ("exists-key", dict(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")),
    ("exists-key-any-effect", dict(key="example.com/maintenance", operator="Exists")),
    ("equal-empty-effect", dict(key="team", operator="Equal", value="vision")),
    ("prefer-noschedule", dict(key="soft", operator="Equal", value="true",
                               effect="PreferNoSchedule")),
    ("noexecute-seconds", dict(key="node.kubernetes.io/not-ready", operator="Exists",
                               effect="NoExecute", toleration_seconds=300)),
    ("noexecute-zero-seconds", dict(key="spot", operator="Equal", value="reclaim",
                                    effect="NoExecute", toleration_seconds=0)),
    ("noexecute-forever", dict(key="node.kubernetes.io/unreachable", operator="Exists",
                               effect="NoExecute")),
    ("numeric-value", dict(key="example.com/generation", operator="Equal", value="10",
                           effect="NoSchedule")),
]


@dsl.component(base_image=PY)
def step(variant: str) -> str:
    return variant


def pipeline(scheduled: bool):
    @dsl.pipeline(name="toleration-matrix", description="One task per toleration shape.")
    def toleration_matrix():
        tasks = {}
        for variant, _ in VARIANTS_TOL:
            tasks[variant] = step(variant=variant).set_display_name(f"Variant {variant}")
        collect = step(variant="all").set_display_name("Variant all")
        dedupe = step(variant="dedupe").set_display_name("Variant dedupe")

        if not scheduled:
            return
        # one rule per variant; each also selects "Variant all" -> all of them, in rule order
        for variant, kw in VARIANTS_TOL:
            kubernetes.add_toleration(tasks[variant], **kw)
        for variant, kw in VARIANTS_TOL:
            kubernetes.add_toleration(collect, **kw)
        # rules dedupe-first / dedupe-second add the same toleration (and dedupe-second one
        # more): it is written once
        kubernetes.add_toleration(dedupe, key="dedicated", operator="Equal", value="ml",
                                  effect="NoExecute", toleration_seconds=3600)
        kubernetes.add_toleration(dedupe, key="gpu", operator="Exists")

    return toleration_matrix


def _policy() -> str:
    def flow(kw):
        names = {"toleration_seconds": "tolerationSeconds"}
        parts = []
        for k, v in kw.items():
            k = names.get(k, k)
            if isinstance(v, str) and v in ("true", "10"):
                v = f'"{v}"'
            parts.append(f"{k}: {v}")
        return "{" + ", ".join(parts) + "}"

    rules = []
    for variant, kw in VARIANTS_TOL:
        rules.append(f"""\
  - name: tol-{variant}
    match:
      names: ["Variant {variant}", "Variant all"]
    tolerations:
    - {flow(kw)}
""")
    return f"""\
# toleration_matrix (kfp v2). Mirrors the kfp.kubernetes.add_toleration calls in
# testdata/pipelines/v2/toleration_matrix.py: one call per variant on its own task and the
# same calls, in the same order, on "Variant all"; the dedupe task gets each distinct
# toleration once (the SDK does not de-duplicate, SPEC merge does).
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: toleration-matrix
spec:
  rules:
{''.join(rules)}  - name: dedupe-first
    match:
      names: ["Variant dedupe"]
    tolerations:
    - {{key: dedicated, operator: Equal, value: ml, effect: NoExecute, tolerationSeconds: 3600}}
  - name: dedupe-second
    match:
      names: ["Variant dedupe"]
    tolerations:
    - {{key: dedicated, operator: Equal, value: ml, effect: NoExecute, tolerationSeconds: 3600}}
    - {{key: gpu, operator: Exists}}
    - {{key: dedicated, operator: Equal, value: ml, effect: NoExecute, tolerationSeconds: 3600}}
"""


POLICY = _policy()

NOTES = """\
# v2 / toleration_matrix

One `step` task per toleration shape, display name `Variant <shape>`, each selected by one
rule `tol-<shape>`; every rule also selects `Variant all`, which therefore gets all ten in
rule order. Shapes: Equal + NoSchedule; `{operator: Exists}` alone (no key: every taint);
Exists with a key; Exists with a key and no effect; Equal with no effect; PreferNoSchedule
with the value `"true"`; NoExecute + `tolerationSeconds: 300`; NoExecute +
`tolerationSeconds: 0`; NoExecute without seconds; the numeric-looking value `"10"`.

In the v2 platform document: fields that are not set are absent (no `effect:` key for an
empty effect, only `operator: Exists` for the key-less one), keys are sorted, strings YAML
would read as other types are single-quoted (`value: 'true'`, `value: '10'`), and
`tolerationSeconds` is a quoted string (`'300'`, `'0'`).

`Variant dedupe`: the rules dedupe-first and dedupe-second add the same toleration three
times in total (`tolerationSeconds: 3600` in the policy, `'3600'` once written); it is
written once, followed by `gpu` Exists. The SDK source adds each distinct toleration once.
"""
