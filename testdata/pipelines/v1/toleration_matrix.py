"""KFP v1: every toleration shape, one template per variant (selected by display name),
one template that collects all of them through several rules, de-duplication, and
nodeSelector values kfp quotes."""
from kfp import dsl
from kfp.components import create_component_from_func

from _common import PY_IMAGE, tol

# (variant, V1Toleration arguments key, operator, value, effect, seconds)
VARIANTS_TOL = [
    ("equal-noschedule", dict(key="dedicated", operator="Equal", value="ml", effect="NoSchedule")),
    ("exists-no-key", dict(operator="Exists")),
    ("exists-key", dict(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")),
    ("exists-key-any-effect", dict(key="example.com/maintenance", operator="Exists")),
    ("equal-empty-effect", dict(key="team", operator="Equal", value="vision")),
    ("prefer-noschedule", dict(key="soft", operator="Equal", value="true",
                               effect="PreferNoSchedule")),
    ("noexecute-seconds", dict(key="node.kubernetes.io/not-ready", operator="Exists",
                               effect="NoExecute", seconds=300)),
    ("noexecute-zero-seconds", dict(key="spot", operator="Equal", value="reclaim",
                                    effect="NoExecute", seconds=0)),
    ("noexecute-forever", dict(key="node.kubernetes.io/unreachable", operator="Exists",
                               effect="NoExecute")),
    ("numeric-value", dict(key="example.com/generation", operator="Equal", value="10",
                           effect="NoSchedule")),
]


def step(variant: str) -> str:
    return variant


step_op = create_component_from_func(step, base_image=PY_IMAGE)


def pipeline(scheduled: bool):
    @dsl.pipeline(name="toleration-matrix", description="One template per toleration shape.")
    def toleration_matrix():
        ops = {v: step_op(v).set_display_name(f"Variant {v}") for v, _ in VARIANTS_TOL}
        collect = step_op("all").set_display_name("Variant all")
        dedupe = step_op("dedupe").set_display_name("Variant dedupe")
        quoted = step_op("quoted-selector").set_display_name("Variant quoted-selector")

        if not scheduled:
            return
        for variant, kw in VARIANTS_TOL:
            ops[variant].add_toleration(tol(**kw))
        for variant, kw in VARIANTS_TOL:
            collect.add_toleration(tol(**kw))
        # dedupe-first / dedupe-second: each distinct toleration once
        dedupe.add_toleration(tol("dedicated", "Equal", "ml", "NoExecute", 3600))
        dedupe.add_toleration(tol("gpu", "Exists"))
        # quoted-selector: values kfp writes quoted
        quoted.add_node_selector_constraint("example.com/enabled", "true")
        quoted.add_node_selector_constraint("example.com/yes", "yes")
        quoted.add_node_selector_constraint("example.com/num", "10")
        quoted.add_node_selector_constraint("example.com/plain", "abc")

    return toleration_matrix


def _policy() -> str:
    def flow(kw):
        names = {"seconds": "tolerationSeconds"}
        parts = []
        for k, v in kw.items():
            k = names.get(k, k)
            if isinstance(v, str) and v in ("true", "10"):
                v = f'"{v}"'
            parts.append(f"{k}: {v}")
        return "{" + ", ".join(parts) + "}"

    rules = "".join(f"""\
  - name: tol-{variant}
    match:
      names: ["Variant {variant}", "Variant all"]
    tolerations:
    - {flow(kw)}
""" for variant, kw in VARIANTS_TOL)
    return f"""\
# toleration_matrix (kfp v1). Mirrors the op.add_toleration(V1Toleration(...)) calls in
# testdata/pipelines/v1/toleration_matrix.py: one call per variant on its own template and
# the same calls, in the same order, on "Variant all"; the dedupe template gets each
# distinct toleration once (the SDK does not de-duplicate, SPEC merge does); and
# add_node_selector_constraint x4 on "Variant quoted-selector".
apiVersion: kfsched.dev/v1alpha1
kind: SchedulingPolicy
metadata:
  name: toleration-matrix
spec:
  rules:
{rules}  - name: dedupe-first
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
  - name: quoted-selector
    match:
      names: ["Variant quoted-selector"]
    nodeSelector:                       # in this order: kfp v1 keeps insertion order
      example.com/enabled: "true"
      example.com/yes: "yes"
      example.com/num: "10"
      example.com/plain: abc
"""


POLICY = _policy()

NOTES = """\
# v1 / toleration_matrix

One `step` template per toleration shape (display name `Variant <shape>`), each selected
by one rule `tol-<shape>`; every rule also selects `Variant all` (template `step-11`),
which gets all ten in rule order. Shapes: Equal + NoSchedule; `{operator: Exists}` alone;
Exists with a key; Exists with a key and no effect; Equal with no effect;
PreferNoSchedule with value `"true"`; NoExecute + `tolerationSeconds: 300`; NoExecute +
`tolerationSeconds: 0`; NoExecute without seconds; the value `"10"`.

kfp v1 writing style to expect: a toleration is a flow map `{effect: …, key: …,
operator: …, value: …}` (kubernetes-client key order), `tolerationSeconds` an integer,
`'10'` single-quoted, and a toleration holding `"true"` is a block mapping (kfp forces
double quotes on true/yes/…, and PyYAML writes a map with a styled scalar in block style).

- `Variant dedupe`: the same toleration from two rules (and a second one) → written once.
- `Variant quoted-selector`: nodeSelector `"true"`, `"yes"`, `'10'`, `abc` in insertion
  (= policy) order; because of the forced double quotes it is a block mapping.
"""
