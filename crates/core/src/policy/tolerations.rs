//! Tolerations and taint effects, as the API server validates them.

use k8s_openapi::api::core::v1::Toleration;

use super::validate::Validator;
use crate::k8s;
use crate::suggest::nearest;

impl Validator {
    pub(super) fn taint_effect(&mut self, effect: &str, allow_empty: bool, path: &str) {
        if effect.is_empty() {
            if !allow_empty {
                self.err(path, "Required value: a taint needs an effect: NoSchedule, PreferNoSchedule or NoExecute");
            }
            return;
        }
        if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            let hint = nearest(effect, ["NoSchedule", "PreferNoSchedule", "NoExecute"])
                .map(|n| format!("; did you mean {n:?}?"))
                .unwrap_or_default();
            self.err(
                path,
                format!("Unsupported value: {effect:?}: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"{hint}"),
            );
        }
    }

    pub(super) fn toleration(&mut self, t: &Toleration, path: &str) {
        let key = t.key.clone().unwrap_or_default();
        let op = t.operator.clone().unwrap_or_default();
        let value = t.value.clone().unwrap_or_default();
        let effect = t.effect.clone().unwrap_or_default();
        if !key.is_empty() {
            self.label_name(&key, &format!("{path}.key"));
        }
        if key.is_empty() && op != "Exists" {
            self.err(
                &format!("{path}.operator"),
                format!("Invalid value: {op:?}: operator must be Exists when `key` is empty, which means \"match all values and all keys\""),
            );
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            self.err(
                &format!("{path}.effect"),
                format!("Invalid value: {effect:?}: effect must be 'NoExecute' when `tolerationSeconds` is set"),
            );
        }
        match op.as_str() {
            "Equal" | "" => {
                let errs = k8s::label_value(&value);
                if !errs.is_empty() {
                    self.err(
                        &format!("{path}.value"),
                        format!("Invalid value: {value:?}: {}", errs.join(";")),
                    );
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    self.err(&format!("{path}.value"), format!("Invalid value: {value:?}: value must be empty when `operator` is 'Exists'"));
                }
            }
            other => {
                let hint = nearest(other, ["Equal", "Exists"])
                    .map(|n| format!("; did you mean {n:?}?"))
                    .unwrap_or_default();
                self.err(&format!("{path}.operator"), format!("Unsupported value: {other:?}: supported values: \"Equal\", \"Exists\"{hint}"));
            }
        }
        self.taint_effect(&effect, true, &format!("{path}.effect"));
    }
}
