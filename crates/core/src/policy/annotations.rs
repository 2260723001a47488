//! What the API server checks in a pod's annotations, for a rule's
//! `podAnnotations`: the keys it warns about (`pkg/api/pod/warnings.go` of
//! Kubernetes 1.36).

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
    fn deprecated_keys() {
        assert!(deprecated("container.apparmor.security.beta.kubernetes.io/main").is_some());
        assert!(deprecated("seccomp.security.alpha.kubernetes.io/pod").is_some());
        assert_eq!(deprecated("example.com/x"), None);
    }
}
