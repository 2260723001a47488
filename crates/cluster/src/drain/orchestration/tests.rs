use super::*;
use std::collections::HashSet;

fn plan(name: &str) -> PodPlan {
    PodPlan {
        namespace: "ns".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        fate: Fate::Remove,
        controller: None,
        warnings: Vec::new(),
        budgets: Vec::new(),
        finished: false,
    }
}

fn drain(names: &[&str]) -> NodeDrain {
    let survey = Survey {
        node: "n".into(),
        we_cordoned: true,
        plans: names.iter().map(|n| plan(n)).collect(),
        watch_budgets: false,
    };
    NodeDrain::new(survey, &DrainOptions::new(Targets::Names(vec!["n".into()])))
}

/// What the watch reports moves the pods on, and each change is told once.
#[test]
fn the_watch_settles_pods_gone_or_replaced() {
    let mut d = drain(&["a", "b", "c", "d"]);
    d.states[1].1 = PodState::Failed("no".into());
    d.states[2].1 = PodState::Terminating;
    let mut told = Vec::new();
    let mut emit = |e: Event<'_>| {
        if let Event::Pod {
            pod,
            step: PodStep::Gone { replaced },
        } = e
        {
            told.push((pod.name.clone(), replaced));
        }
    };
    // d took a new UID: replaced.
    d.on_pod_change(
        PodChange::Present {
            key: "ns/d".into(),
            uid: "other".into(),
            deleting_since: None,
        },
        &mut emit,
    );
    // A (re)list without a and b: a is gone; b's failure stands.
    let listed: HashSet<(String, String)> = [("ns/c".to_string(), "uid-c".to_string())].into();
    d.on_pod_change(PodChange::Snapshot(listed.clone()), &mut emit);
    d.on_pod_change(PodChange::Snapshot(listed), &mut emit);
    d.on_pod_change(
        PodChange::Gone {
            key: "ns/c".into(),
            uid: "uid-c".into(),
        },
        &mut emit,
    );
    assert_eq!(
        told,
        [
            ("d".to_string(), true),
            ("a".to_string(), false),
            ("c".to_string(), false)
        ]
    );
    assert_eq!(d.states[1].1, PodState::Failed("no".into()));
    assert_eq!(d.reason(), Some(NotDrained::EvictionsFailed));
}
