//! What the API server checks in a pod's annotations, for a rule's
//! `podAnnotations`: the values it refuses and the keys it warns about
//! (`ValidatePodSpecificAnnotations` and `pkg/api/pod/warnings.go` of
//! Kubernetes 1.36). What depends on the pod itself (that an AppArmor
//! annotation names one of its containers, that a mirror pod has a node
//! name) cannot be checked offline.

const SECCOMP_POD: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER: &str = "container.seccomp.security.alpha.kubernetes.io/";
const APPARMOR_CONTAINER: &str = "container.apparmor.security.beta.kubernetes.io/";
const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The server's errors about the value of annotation `key`, after
/// `Invalid value: "VALUE": `.
pub(crate) fn value_errors(key: &str, value: &str) -> Vec<String> {
    if key == SECCOMP_POD || key.starts_with(SECCOMP_CONTAINER) {
        return seccomp_profile(value);
    }
    if key.starts_with(APPARMOR_CONTAINER) {
        let ok = matches!(value, "" | "runtime/default" | "unconfined")
            || value.starts_with("localhost/");
        return if ok {
            vec![]
        } else {
            vec![format!("invalid AppArmor profile name: {value:?}")]
        };
    }
    if key == DELETION_COST && !is_deletion_cost(value) {
        return vec!["must be a 32bit integer".into()];
    }
    vec![]
}

/// `ValidateSeccompProfile`: a known profile, or `localhost/` and a
/// relative path that does not step up.
fn seccomp_profile(value: &str) -> Vec<String> {
    if matches!(value, "runtime/default" | "docker/default" | "unconfined") {
        return vec![];
    }
    let Some(path) = value.strip_prefix("localhost/") else {
        return vec!["must be a valid seccomp profile".into()];
    };
    let mut errs = Vec::new();
    if path.starts_with('/') {
        errs.push("must be a relative path".into());
    }
    if path.split('/').any(|p| p == "..") {
        errs.push("must not contain '..'".into());
    }
    errs
}

/// `GetDeletionCostFromPodAnnotations`: a 32-bit decimal integer without
/// a plus sign or leading zeros.
fn is_deletion_cost(value: &str) -> bool {
    let first_ok = match value.as_bytes().first() {
        Some(b'-' | b'1'..=b'9') => true,
        Some(b'0') => value == "0",
        _ => false,
    };
    first_ok && value.parse::<i32>().is_ok()
}

/// Why a pod annotation is deprecated or does nothing, when it is. The
/// server says so about the seccomp and AppArmor annotations only when the
/// pod lacks the field that replaces them, for a container the pod has;
/// the policy knows neither, and the annotation is deprecated (AppArmor)
/// or does nothing (seccomp) in every pod, so kfsched always warns.
pub(crate) fn deprecated(key: &str) -> Option<&'static str> {
    const NO_SYSCTLS: &str = r#"non-functional in v1.11+; use the "sysctls" field instead"#;
    const NO_SECCOMP: &str = r#"non-functional in v1.27+; use the "seccompProfile" field instead"#;
    Some(match key {
        "scheduler.alpha.kubernetes.io/critical-pod" => {
            r#"non-functional in v1.16+; use the "priorityClassName" field instead"#
        }
        "security.alpha.kubernetes.io/sysctls" | "security.alpha.kubernetes.io/unsafe-sysctls" => {
            NO_SYSCTLS
        }
        "seccomp.security.alpha.kubernetes.io/pod" => NO_SECCOMP,
        k if k.starts_with("container.seccomp.security.alpha.kubernetes.io/") => NO_SECCOMP,
        k if k.starts_with("container.apparmor.security.beta.kubernetes.io/") => {
            r#"deprecated since v1.30; use the "appArmorProfile" field instead"#
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_the_server_refuses() {
        let bad = |k: &str, v: &str| !value_errors(k, v).is_empty();
        assert!(!bad(SECCOMP_POD, "runtime/default"));
        assert!(!bad(SECCOMP_POD, "localhost/profiles/a.json"));
        assert!(bad(SECCOMP_POD, "bogus"));
        assert_eq!(value_errors(SECCOMP_POD, "localhost//a/../b").len(), 2);
        assert!(bad(
            "container.seccomp.security.alpha.kubernetes.io/c",
            "default"
        ));
        assert!(!bad(
            "container.apparmor.security.beta.kubernetes.io/c",
            "localhost/p"
        ));
        assert!(bad("container.apparmor.security.beta.kubernetes.io/c", "p"));
        for ok in ["0", "-5", "2147483647"] {
            assert!(!bad(DELETION_COST, ok), "{ok}");
        }
        for no in ["", "+1", "007", "2147483648", "1.5", "x"] {
            assert!(bad(DELETION_COST, no), "{no}");
        }
        assert!(!bad("example.com/x", "anything"));
    }

    #[test]
    fn deprecated_keys() {
        assert!(deprecated("container.apparmor.security.beta.kubernetes.io/main").is_some());
        assert!(deprecated(SECCOMP_POD).is_some());
        assert_eq!(deprecated("example.com/x"), None);
    }
}
