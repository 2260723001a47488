//! Label keys and values, and annotations, as the API server validates them.

use super::validate::Validator;
use super::{annotations, schema};
use crate::k8s;

impl Validator {
    /// A label key held in a field's value (`key: KEY`).
    pub(super) fn label_name(&mut self, key: &str, path: &str) {
        let errs = k8s::qualified_name(key);
        for m in errs {
            self.err(path, format!("Invalid value: {key:?}: {m}"));
        }
    }

    /// A label map: a bad key is reported at the key, a bad value at the value.
    pub(super) fn labels(&mut self, labels: &[(String, String)], path: &str) {
        for (k, v) in labels {
            let p = schema::entry_path(path, k);
            for m in k8s::qualified_name(k) {
                self.err_key(&p, format!("Invalid value: {k:?}: {m}"));
            }
            let errs = k8s::label_value(v);
            for m in errs {
                self.err(&p, format!("Invalid value: {v:?}: {m}"));
            }
        }
    }

    pub(super) fn annotations(&mut self, ann: &[(String, String)], path: &str) {
        let mut total = 0usize;
        for (k, v) in ann {
            let p = schema::entry_path(path, k);
            for m in k8s::qualified_name(&k.to_lowercase()) {
                self.err_key(&p, format!("Invalid value: {k:?}: {m}"));
            }
            for m in annotations::value_errors(k, v) {
                self.err(&p, format!("Invalid value: {v:?}: {m}"));
            }
            if let Some(m) = annotations::deprecated(k) {
                self.warn_key(&p, m);
            }
            total += k.len() + v.len();
        }
        if total > 256 * 1024 {
            self.err(
                path,
                format!("Too long: may not be more than 262144 bytes (got {total})"),
            );
        }
    }
}
