//! PriorityClasses, and what the Priority admission plugin does with them
//! when a pod is created (`plugin/pkg/admission/priority`, Kubernetes
//! 1.36): a named class must exist, or the API server refuses the pod; its
//! value becomes the pod's priority and its preemption policy the pod's; a
//! pod that names none gets the global default class, if there is one.
//!
//! Whether a class exists is known only where the classes are: the live
//! cluster, or a snapshot that holds them (`kubectl get
//! nodes,priorityclasses -o yaml`). Otherwise the pod's class is not
//! judged, and the report says so.

use super::pod::Pod;

/// A PriorityClass as the Priority admission plugin reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriorityClass {
    pub name: String,
    pub value: i32,
    pub global_default: bool,
    /// `preemptionPolicy: Never`.
    pub never_preempts: bool,
}

impl PriorityClass {
    /// From the API object.
    pub fn of(c: &k8s_openapi::api::scheduling::v1::PriorityClass) -> PriorityClass {
        PriorityClass {
            name: c.metadata.name.clone().unwrap_or_default(),
            value: c.value.unwrap_or(0),
            global_default: c.global_default.unwrap_or(false),
            never_preempts: c.preemption_policy.as_deref() == Some("Never"),
        }
    }
}

/// The cluster's PriorityClasses, when the nodes' source has them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Classes {
    Known(Vec<PriorityClass>),
    /// Not known, and why (for the report).
    Unknown(String),
}

/// The Priority admission plugin on `pod` (its class named or defaulted):
/// its priority and preemption policy set, or why the server refuses it,
/// or a note that the class is not judged.
pub fn admit(pod: &mut Pod, classes: &Classes) {
    let list = match classes {
        Classes::Known(list) => list,
        Classes::Unknown(why) => {
            if let Some(name) = &pod.priority_class_name {
                pod.unjudged.push(format!(
                    "priorityClassName {name:?}: whether the cluster has this PriorityClass is not judged ({why})"
                ));
            }
            return;
        }
    };
    let class = match &pod.priority_class_name {
        Some(name) => match list.iter().find(|c| &c.name == name) {
            Some(c) => Some(c),
            None => {
                pod.refused = Some(format!(
                    "the API server refuses the pod: no PriorityClass with name {name} was found (the Priority admission plugin)"
                ));
                return;
            }
        },
        // Of several global defaults (a race), the lowest value.
        None => list
            .iter()
            .filter(|c| c.global_default)
            .min_by_key(|c| c.value),
    };
    // Without a class, the priority is 0.
    let value = class.map_or(0, |c| c.value);
    if let Some(p) = pod.priority.filter(|&p| p != value) {
        pod.refused = Some(format!(
            "the API server refuses the pod: the integer value of priority ({p}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        ));
        return;
    }
    // Without a class the priority stays unset: 0, as a pod that states none.
    if class.is_some() {
        pod.priority = Some(value);
    }
    // A class's policy defaults to PreemptLowerPriority, as the plugin's
    // is without a class: a pod that says Never beside another is refused.
    let never = class.is_some_and(|c| c.never_preempts);
    if pod.never_preempts && !never {
        pod.refused = Some(
            "the API server refuses the pod: the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name".into(),
        );
        return;
    }
    pod.never_preempts = never;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, value: i32, global_default: bool) -> PriorityClass {
        PriorityClass {
            name: name.into(),
            value,
            global_default,
            never_preempts: false,
        }
    }

    #[test]
    fn a_named_class_must_exist_and_sets_the_priority() {
        let known = Classes::Known(vec![class("high", 1000, false), class("default", 5, true)]);
        let mut pod = Pod {
            priority_class_name: Some("high".into()),
            ..Pod::default()
        };
        admit(&mut pod, &known);
        assert_eq!((pod.priority, &pod.refused), (Some(1000), &None));
        let mut pod = Pod {
            priority_class_name: Some("hihg".into()),
            ..Pod::default()
        };
        admit(&mut pod, &known);
        assert_eq!(
            pod.refused.as_deref(),
            Some(
                "the API server refuses the pod: no PriorityClass with name hihg was found (the Priority admission plugin)"
            )
        );
        let mut pod = Pod::default();
        admit(&mut pod, &known);
        assert_eq!(pod.priority, Some(5), "the global default");
        let mut pod = Pod {
            priority_class_name: Some("high".into()),
            priority: Some(0),
            ..Pod::default()
        };
        admit(&mut pod, &known);
        assert!(pod.refused.is_some(), "a stated priority that differs");
    }

    #[test]
    fn unknown_classes_are_said_not_judged() {
        let mut pod = Pod {
            priority_class_name: Some("high".into()),
            ..Pod::default()
        };
        admit(
            &mut pod,
            &Classes::Unknown("the policy's pools hold none".into()),
        );
        assert_eq!(pod.refused, None);
        assert_eq!(
            pod.unjudged,
            [
                "priorityClassName \"high\": whether the cluster has this PriorityClass is not judged (the policy's pools hold none)"
            ]
        );
    }
}
