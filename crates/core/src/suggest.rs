//! "Did you mean": the known word nearest to a misspelt one, for unknown
//! fields, operators, effects, kinds and pool names.

/// The nearest candidate to `word`: equal ignoring ASCII case, else within
/// a third of the longer word's length (1 to 4) in edits — insert, delete,
/// substitute or swap two neighbours (the optimal-string-alignment distance,
/// so `vaule` is one slip from `value`) — else a prefix or suffix slip of
/// at most two characters (`toleration` for `tolerations`).
pub fn nearest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let lw = word.to_ascii_lowercase();
    let mut best: Option<(&str, usize)> = None;
    for c in candidates {
        if c.eq_ignore_ascii_case(word) {
            return Some(c);
        }
        let d = strsim::osa_distance(&lw, &c.to_ascii_lowercase());
        let limit = (c.len().max(word.len()) / 3).clamp(1, 4);
        if d <= limit && best.is_none_or(|(_, bd)| d < bd) {
            best = Some((c, d));
        }
        if best.is_none()
            && (c.starts_with(&lw) || lw.starts_with(c))
            && c.len().abs_diff(word.len()) <= 2
        {
            best = Some((c, 2));
        }
    }
    best.map(|(c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_counts_a_swap_of_neighbours_as_one_slip() {
        assert_eq!(strsim::osa_distance("vaule", "value"), 1);
        assert_eq!(strsim::osa_distance("nodse", "nodes"), 1);
        assert_eq!(strsim::osa_distance("kitten", "sitting"), 3);
        assert_eq!(strsim::osa_distance("", "abc"), 3);
        assert_eq!(nearest("vaule", ["key", "value", "effect"]), Some("value"));
        assert_eq!(
            nearest(
                "nodse",
                ["name", "nodes", "nodeSelector", "labels", "taints"]
            ),
            Some("nodes")
        );
        assert_eq!(nearest("efect", ["key", "value", "effect"]), Some("effect"));
        assert_eq!(nearest("zzz", ["key", "value", "effect"]), None);
    }

    #[test]
    fn nearest_word() {
        assert_eq!(
            nearest("toleration", ["tolerations", "nodeSelector"]),
            Some("tolerations")
        );
        assert_eq!(
            nearest("nodeselector", ["tolerations", "nodeSelector"]),
            Some("nodeSelector")
        );
        assert_eq!(nearest("zzz", ["tolerations", "nodeSelector"]), None);
    }
}
