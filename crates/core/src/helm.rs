//! Telling a Helm chart's templates (Go templates, not YAML until rendered)
//! from YAML that fails to parse, so a hook over every `*.yaml` of a
//! repository skips them with a warning instead of failing.

/// The offset of the first Go template action (`{{ .Values.x }}`,
/// `{{- if ... }}`, `{{/* ... */}}`) in `text`. Argo's own `{{inputs.x}}`
/// and `{{=expr}}` tags are not Go actions: a workflow with a YAML error is
/// still an error.
pub(crate) fn template_action(text: &str) -> Option<usize> {
    const WORDS: &[&str] = &[
        "if ",
        "else",
        "end",
        "range ",
        "with ",
        "define ",
        "template ",
        "block ",
        "include ",
        "toYaml ",
        "tpl ",
        "required ",
        "default ",
        "quote ",
        "printf ",
        "$",
    ];
    let mut from = 0;
    while let Some(p) = text[from..].find("{{") {
        let at = from + p;
        let rest = &text[at + 2..];
        let rest = rest.strip_prefix('-').unwrap_or(rest);
        let inner = rest.trim_start_matches([' ', '\t']);
        let spaced = inner.len() < rest.len();
        let closes = rest.lines().next().is_some_and(|l| l.contains("}}"));
        if (inner.starts_with("/*")
            || inner.starts_with('.') && (spaced || rest.starts_with('.'))
            || spaced && WORDS.iter().any(|w| inner.starts_with(w)))
            && (closes || inner.starts_with("/*"))
        {
            return Some(at);
        }
        from = at + 2;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::template_action;

    #[test]
    fn go_template_actions_are_told_from_argo_tags() {
        for helm in [
            "{{- if .Values.enabled }}",
            "name: {{ .Release.Name }}",
            "name: {{.Release.Name}}",
            "{{/* a comment */}}",
            "{{ include \"x\" . | nindent 4 }}",
            "{{- range $k, $v := .Values.m }}",
            "{{ $x := 1 }}",
            "{{- end }}",
        ] {
            assert!(template_action(helm).is_some(), "{helm}");
        }
        for argo in [
            "args: [\"{{inputs.parameters.x}}\"]",
            "value: \"{{workflow.name}}\"",
            "when: \"{{steps.flip.outputs.result}} == heads\"",
            "value: \"{{=sprig.upper(inputs.parameters.x)}}\"",
            "value: \"{{ inputs.parameters.x }}\"",
            "value: \"{{item}}\"",
            "{{",
        ] {
            assert_eq!(template_action(argo), None, "{argo}");
        }
    }
}
