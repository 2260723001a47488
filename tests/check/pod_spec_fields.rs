//! Scenarios for the pod-spec fields, in the hand-written world of
//! `scenarios` (every node has a `zone`, only the CPU nodes a `disk`, only
//! the GPU nodes an `accelerator`, none a `rack`):
//! - topology spread constraints, judged for a component's first pod as
//!   the PodTopologySpread filter judges it: a DoNotSchedule constraint
//!   refuses the nodes without its topologyKey label, whatever
//!   `minDomains` and the inclusion policies say; ScheduleAnyway refuses none;
//! - a PriorityClass that exists gives the pod its priority, one that does
//!   not makes the API server refuse the pod, with the words check uses;
//! - a pod for another scheduler is left alone by kube-scheduler, and
//!   check does not judge it;
//!
//! each as written in a Pod, a Deployment and an Argo template's
//! podSpecPatch, and as a policy (`-p`) writes it.

use super::scenarios::{Expect, POLICY_HEAD, Scenario, argo, pod, s};

const CPU_NODES: &[&str] = &["cpu-a", "cpu-b", "tiny", "spot"];
const LABEL: &str = "didn't match pod topology spread constraints (missing required label)";

fn spread(key: &str, when: &str, extra: &str) -> String {
    format!(
        "  topologySpreadConstraints:\n  - {{maxSkew: 1, topologyKey: {key}, whenUnsatisfiable: {when}, labelSelector: {{matchLabels: {{app: spread}}}}{extra}}}\n"
    )
}

fn deployment(spec_extra: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: spread}}\nspec:\n  selector: {{matchLabels: {{app: spread}}}}\n  template:\n    metadata: {{labels: {{app: spread}}}}\n    spec:\n      containers: [{{name: main, image: busybox}}]\n{spec_extra}"
    )
}

fn with_policy(name: &'static str, file: String, rules: &str, expect: Expect) -> Scenario {
    Scenario {
        name,
        files: vec![("input.yaml", file)],
        policy: Some(format!("{POLICY_HEAD}  rules:\n{rules}")),
        expect,
    }
}

pub(super) fn scenarios() -> Vec<Scenario> {
    use Expect::*;
    vec![
        s(
            "spread over zones, which every node has",
            pod(&spread("zone", "DoNotSchedule", "")),
            Fits(CPU_NODES),
        ),
        s(
            "spread over disks: the nodes without the label do not fit",
            pod(&spread("disk", "DoNotSchedule", "")),
            Fits(&["cpu-a", "cpu-b"]),
        ),
        s(
            "spread over a label no node has",
            pod(&spread("rack", "DoNotSchedule", "")),
            None(&[LABEL, "Preemption is not helpful for scheduling"]),
        ),
        s(
            "a ScheduleAnyway spread refuses no node",
            pod(&spread("rack", "ScheduleAnyway", "")),
            Fits(CPU_NODES),
        ),
        s(
            "two hard spreads need both labels",
            pod(&format!(
                "{}  - {{maxSkew: 2, topologyKey: disk, whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{app: spread}}}}}}\n",
                spread("zone", "DoNotSchedule", "")
            )),
            Fits(&["cpu-a", "cpu-b"]),
        ),
        s(
            "a spread beside a node selector",
            pod(&format!(
                "  nodeSelector: {{pool: cpu}}\n{}",
                spread("accelerator", "DoNotSchedule", "")
            )),
            None(&[LABEL, "didn't match Pod's node affinity/selector"]),
        ),
        s(
            "minDomains and inclusion policies do not refuse the first pod",
            pod(&spread(
                "zone",
                "DoNotSchedule",
                ", minDomains: 5, nodeAffinityPolicy: Ignore, nodeTaintsPolicy: Honor",
            )),
            Fits(CPU_NODES),
        ),
        s(
            "a Deployment spread with matchLabelKeys",
            deployment(
                "      topologySpreadConstraints:\n      - {maxSkew: 1, topologyKey: disk, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: spread}}, matchLabelKeys: [pod-template-hash]}\n",
            ),
            Fits(&["cpu-a", "cpu-b"]),
        ),
        s(
            "an Argo template's podSpecPatch spreads",
            argo(
                "",
                "  - name: main\n    podSpecPatch: '{\"topologySpreadConstraints\": [{\"maxSkew\": 1, \"topologyKey\": \"disk\", \"whenUnsatisfiable\": \"DoNotSchedule\"}]}'\n    container: {image: busybox}\n",
            ),
            Fits(&["cpu-a", "cpu-b"]),
        ),
        with_policy(
            "a policy spreads a Deployment (-p)",
            deployment(""),
            "  - name: spread\n    topologySpreadConstraints:\n    - {maxSkew: 1, topologyKey: disk, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: spread}}}\n",
            Fits(&["cpu-a", "cpu-b"]),
        ),
        with_policy(
            "a policy spreads an Argo template through its podSpecPatch (-p)",
            argo(
                "",
                "  - name: main\n    podSpecPatch: '{\"containers\": [{\"name\": \"main\", \"resources\": {\"requests\": {\"cpu\": \"1\"}}}]}'\n    container: {image: busybox}\n",
            ),
            "  - name: spread\n    topologySpreadConstraints:\n    - {maxSkew: 1, topologyKey: disk, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: spread}}}\n",
            Fits(&["cpu-a", "cpu-b"]),
        ),
        s(
            "a PriorityClass that exists",
            pod("  priorityClassName: {P}-high\n"),
            Fits(CPU_NODES),
        ),
        s(
            "a PriorityClass that does not exist",
            pod("  priorityClassName: {P}-missing\n"),
            Refused("no PriorityClass with name"),
        ),
        with_policy(
            "a policy names a PriorityClass that does not exist (-p)",
            deployment(""),
            "  - name: urgent\n    priorityClassName: no-such-class\n",
            Refused("no PriorityClass with name no-such-class was found"),
        ),
        with_policy(
            "a policy names a PriorityClass that exists (-p)",
            argo("", "  - name: main\n    container: {image: busybox}\n"),
            "  - name: urgent\n    priorityClassName: '{P}-high'\n",
            Fits(CPU_NODES),
        ),
        s(
            "another scheduler's pod",
            pod("  schedulerName: volcano\n  nodeSelector: {pool: gpu}\n"),
            Ignored,
        ),
        with_policy(
            "a policy hands an Argo template to another scheduler (-p)",
            argo("", "  - name: main\n    container: {image: busybox}\n"),
            "  - name: gang\n    schedulerName: volcano\n",
            Ignored,
        ),
    ]
}
