//! Help and guide agree: every command's `--help` lists exactly the flags
//! (and short forms) of its flag tables in docs/guide.md; the selector
//! syntax, the `kinds` a rule can name and the commands that take inputs
//! are the same in both; `-p` and `-v` appear only on the commands that
//! use them; the guide's `diff | patch` recipe patches; the README leads
//! with the contributors' checkout commands, labelled, then a user's
//! install and first command.

use std::collections::BTreeMap;

use crate::support::{bin, root, run_in};

/// Long flag → short form, for one command.
type Flags = BTreeMap<String, Option<char>>;

fn guide() -> String {
    std::fs::read_to_string(root().join("docs/guide.md")).expect("docs/guide.md")
}

fn help(cmd: &[&str]) -> String {
    let mut args = cmd.to_vec();
    args.push("--help");
    let r = run_in(&root(), &args, None, &[]);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    r.stdout_str()
}

/// The flags a `--help` lists (`-h, --help` left out).
fn help_flags(text: &str) -> Flags {
    let mut out = Flags::new();
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim_start();
        if !(1..=8).contains(&indent) || !t.starts_with('-') {
            continue;
        }
        let (short, rest) = match t.as_bytes() {
            [b'-', c, b',', b' ', ..] if *c != b'-' => (Some(*c as char), &t[4..]),
            _ => (None, t),
        };
        let Some(long) = rest.strip_prefix("--") else {
            continue;
        };
        let name: String = long
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if name != "help" {
            out.insert(name, short);
        }
    }
    out
}

/// The flags in one cell of a guide table: each backticked span whose
/// first word starts with `-` (`-i`, `--color auto\|always\|never`,
/// `--dry-run[=none\|client\|server]`).
fn cell_flags(cell: &str) -> Flags {
    let mut out = Flags::new();
    let mut short = None;
    for (i, span) in cell.split('`').enumerate() {
        if i % 2 == 0 {
            continue;
        }
        let word = span.split_whitespace().next().unwrap_or("");
        let word = word.split(['[', '=']).next().unwrap_or("");
        if let Some(long) = word.strip_prefix("--") {
            out.insert(long.to_string(), short.take());
        } else if let Some(s) = word.strip_prefix('-') {
            short = s.chars().next();
        }
    }
    out
}

fn cells(row: &str) -> Vec<String> {
    // `\|` inside a cell is a literal bar.
    let row = row.replace("\\|", "\u{1}");
    row.trim()
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().replace('\u{1}', "|"))
        .collect()
}

/// Which commands the flag tables under a guide heading are about.
fn section_commands(title: &str) -> Vec<&'static str> {
    match title {
        "rewrite" => vec!["rewrite"],
        "diff" => vec!["diff"],
        "explain" => vec!["explain"],
        "init" => vec!["init"],
        "fn" => vec!["fn"],
        "validate and schema" => vec!["validate"],
        "check: will it schedule?" => vec!["check"],
        "Connecting" => NODE.to_vec(),
        "taint, label, cordon, uncordon" => {
            vec!["node taint", "node label", "node cordon", "node uncordon"]
        }
        "drain" => vec!["node drain"],
        "node apply and node diff" => vec!["node apply", "node diff"],
        "export admission" => vec!["export admission"],
        "audit: what the cluster did" => vec!["audit"],
        _ => vec![],
    }
}

const NODE: [&str; 7] = [
    "node taint",
    "node label",
    "node cordon",
    "node uncordon",
    "node drain",
    "node apply",
    "node diff",
];

/// Every command's flags as the guide's tables give them.
fn guide_flags(text: &str) -> BTreeMap<String, Flags> {
    let mut out: BTreeMap<String, Flags> = BTreeMap::new();
    let mut connection = Flags::new();
    let mut title = String::new();
    let mut fence = false;
    let mut header: Option<Vec<String>> = None;
    let mut pending_connection: Vec<&str> = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            title = h.trim_start_matches('#').trim().to_string();
            header = None;
            continue;
        }
        if !line.starts_with('|') {
            header = None;
            continue;
        }
        let row = cells(line);
        if row.iter().all(|c| c.chars().all(|x| x == '-' || x == ':')) {
            continue;
        }
        let Some(head) = &header else {
            header = (row.first().map(String::as_str) == Some("flag")).then(|| row.clone());
            continue;
        };
        let commands = section_commands(&title);
        if row[0] == "connection flags" {
            pending_connection.extend(commands);
            continue;
        }
        let flags = cell_flags(&row[0]);
        if title == "Connecting" {
            connection.extend(flags.clone().into_iter().filter(|(l, _)| l != "verbose"));
        }
        for (i, cmd) in commands.iter().enumerate() {
            // Per-command columns (`node apply` | `node diff`): a flag
            // applies where its cell is not empty; else "(taint and label only)".
            let applies = if head.len() > 2 {
                row.get(i + 1).is_some_and(|c| !c.is_empty())
            } else if row
                .get(1)
                .is_some_and(|m| m.contains("(taint and label only)"))
            {
                matches!(*cmd, "node taint" | "node label")
            } else {
                true
            };
            if applies {
                out.entry(cmd.to_string())
                    .or_default()
                    .extend(flags.clone());
            }
        }
    }
    for cmd in pending_connection {
        out.entry(cmd.to_string())
            .or_default()
            .extend(connection.clone());
    }
    out
}

#[test]
fn every_commands_help_lists_the_flags_of_its_guide_table() {
    let tables = guide_flags(&guide());
    let commands = [
        "rewrite",
        "diff",
        "explain",
        "validate",
        "init",
        "check",
        "audit",
        "fn",
        "export admission",
    ]
    .into_iter()
    .chain(NODE);
    let mut problems = Vec::new();
    for cmd in commands {
        let words: Vec<&str> = cmd.split(' ').collect();
        let from_help = help_flags(&help(&words));
        let Some(from_guide) = tables.get(cmd) else {
            problems.push(format!("{cmd}: no flag table in the guide"));
            continue;
        };
        for (long, short) in &from_help {
            match from_guide.get(long) {
                None => problems.push(format!("{cmd}: --{long} is in --help, not in the guide")),
                Some(s) if s != short => problems.push(format!(
                    "{cmd}: --{long}: short form {short:?} in --help, {s:?} in the guide"
                )),
                Some(_) => {}
            }
        }
        for long in from_guide.keys() {
            if !from_help.contains_key(long) {
                problems.push(format!("{cmd}: --{long} is in the guide, not in --help"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `-p` and `-v` only where a command uses them, and not on the root.
#[test]
fn policy_and_verbose_flags_only_where_they_are_used() {
    let with_policy = [
        "rewrite",
        "diff",
        "explain",
        "validate",
        "init",
        "check",
        "audit",
        "fn",
        "export admission",
        "node apply",
        "node diff",
    ];
    let with_verbose = [
        "rewrite",
        "diff",
        "explain",
        "validate",
        "check",
        "audit",
        "export admission",
    ]
    .into_iter()
    .chain(NODE)
    .collect::<Vec<_>>();
    for cmd in [
        "",
        "rewrite",
        "diff",
        "explain",
        "validate",
        "init",
        "schema",
        "check",
        "audit",
        "fn",
        "export admission",
        "completion",
        "version",
    ]
    .into_iter()
    .chain(NODE)
    {
        let words: Vec<&str> = cmd.split(' ').filter(|w| !w.is_empty()).collect();
        let flags = help_flags(&help(&words));
        assert_eq!(
            flags.get("policy").copied(),
            with_policy.contains(&cmd).then_some(Some('p')),
            "-p on `{cmd}`"
        );
        assert_eq!(
            flags.get("verbose").copied(),
            with_verbose.contains(&cmd).then_some(Some('v')),
            "-v on `{cmd}`"
        );
    }
}

/// The backticked items from `lead` to the end of its sentence.
fn listed_after(text: &str, lead: &str) -> Vec<String> {
    listed_between(text, lead, ". ")
}

/// The backticked items from `lead` to the first `end` after it.
fn listed_between(text: &str, lead: &str, end: &str) -> Vec<String> {
    let i = text
        .find(lead)
        .unwrap_or_else(|| panic!("{lead:?} in the guide"));
    let sentence = &text[i + lead.len()..];
    let end = sentence.find(end).unwrap_or(sentence.len());
    sentence[..end]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_selector_syntax_is_the_same_in_help_and_guide() {
    let text = guide();
    let mut from_guide = listed_after(&text, "Selectors take kubectl's syntax:");
    from_guide.sort();
    let mut pools = listed_between(&text, "a label selector in kubectl's syntax (", ")");
    pools.sort();
    assert_eq!(pools, from_guide, "the pool's nodeSelector row");
    for cmd in ["taint", "label", "cordon", "uncordon", "drain"] {
        let h = help(&["node", cmd]);
        // Its help text, on the flag's line or (long flags) the next.
        let at = h
            .find("-l, --selector <SELECTOR>")
            .unwrap_or_else(|| panic!("node {cmd}: no -l"));
        let mut lines = h[at..].lines();
        let mut line = lines.next().unwrap_or("").to_string();
        for more in lines.take_while(|l| !l.trim_start().starts_with('-')) {
            line.push(' ');
            line.push_str(more.trim());
        }
        let list = line
            .split_once('(')
            .and_then(|(_, r)| r.split_once(')'))
            .map(|(l, _)| l)
            .unwrap_or_else(|| panic!("node {cmd}: no syntax in {line:?}"));
        let mut from_help: Vec<String> = list.split(',').map(|x| x.trim().to_string()).collect();
        from_help.sort();
        assert_eq!(from_help, from_guide, "node {cmd} -l");
    }
}

/// The guide's `kinds` are the kinds the validator knows (its error lists them).
#[test]
fn the_guide_lists_every_kind_a_rule_can_name() {
    let mut from_guide = listed_after(&guide(), "- `kinds`: the document kind:");
    from_guide.retain(|k| k != "kinds");
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        d.path().join("p.yaml"),
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nspec:\n  rules:\n  - name: r\n    match: {kinds: [Nope]}\n    nodeSelector: {a: b}\n",
    )
    .expect("write");
    let r = run_in(d.path(), &["validate", "p.yaml"], None, &[]);
    let known = r
        .stderr
        .split_once("matches no kind kfsched reads (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(list, _)| list)
        .unwrap_or_else(|| panic!("{}", r.stderr));
    let known: Vec<String> = known.split(", ").map(str::to_string).collect();
    assert_eq!(from_guide, known);
}

/// Every command that takes inputs (`-f/--filename`) is named where the
/// guide says how inputs are given.
#[test]
fn the_guide_names_every_command_that_takes_inputs() {
    let named = listed_after(&guide(), "**Inputs** (for ");
    for cmd in [
        "rewrite",
        "diff",
        "explain",
        "validate",
        "init",
        "check",
        "fn",
        "export admission",
    ] {
        let words: Vec<&str> = cmd.split(' ').collect();
        let takes = help_flags(&help(&words)).contains_key("filename");
        assert_eq!(
            named.iter().any(|n| n == cmd),
            takes,
            "`{cmd}` takes inputs: {takes}; named: {named:?}"
        );
    }
}

/// The guide's patch recipe, run as written: `diff` exits 1 when it prints
/// a patch, and the recipe still applies it. `--help` shows the same lines.
#[test]
fn the_guides_diff_and_patch_recipe_patches() {
    let text = guide();
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("> scheduling.patch"))
        .take(2)
        .collect();
    assert_eq!(lines.len(), 2, "the recipe");
    assert!(lines[1].starts_with("patch -p1 < scheduling.patch"));
    assert!(
        !text.contains("&& patch"),
        "diff exits 1 when it has a patch"
    );
    let recipe: Vec<&str> = lines
        .iter()
        .map(|l| l.split("   #").next().unwrap_or(l).trim_end())
        .collect();
    let diff_help = help(&["diff"]);
    for l in &recipe {
        assert!(diff_help.contains(l), "{l:?} not in diff --help");
    }
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(d.path().join("pipelines")).expect("mkdir");
    std::fs::write(
        d.path().join("policy.yaml"),
        "apiVersion: kfsched.dev/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: p}\nspec:\n  rules:\n  - name: all\n    tolerations: [{key: k, operator: Exists, effect: NoSchedule}]\n",
    )
    .expect("write");
    std::fs::write(
        d.path().join("pipelines/job.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: busybox}]\n",
    )
    .expect("write");
    let script = format!(
        "set -e\nkubectl() {{ [ \"$1\" = kfsched ] && shift; \"{}\" \"$@\"; }}\n{}\n",
        bin(),
        recipe.join("\n")
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(d.path())
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let patched = std::fs::read_to_string(d.path().join("pipelines/job.yaml")).expect("read");
    assert!(patched.contains("tolerations"), "{patched}");
}

/// README: the two checkout commands first, labelled for contributors;
/// right after them, a user's install and first command.
#[test]
fn the_readme_leads_with_contributors_then_a_users_first_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    assert!(readme.lines().count() <= 250);
    let head = &readme[..readme.find("\n## ").expect("a section")];
    let blocks: Vec<&str> = head.split("```").skip(1).step_by(2).collect();
    assert_eq!(
        blocks.len(),
        2,
        "two command blocks before the first section"
    );
    let before_first = &head[..head.find("```").expect("a block")];
    assert!(
        before_first
            .lines()
            .rfind(|l| !l.is_empty())
            .is_some_and(|l| l.contains("contributors")),
        "{before_first}"
    );
    let checkout: Vec<&str> = blocks[0]
        .lines()
        .filter(|l| !l.trim().is_empty() && *l != "sh")
        .collect();
    assert_eq!(checkout.len(), 2, "{checkout:?}");
    assert!(checkout[0].starts_with("cargo run") && checkout[1].starts_with("scripts/test.sh"));
    let between = &head[head.find(blocks[0]).expect("block") + blocks[0].len() + 3..];
    let between = &between[..between.find("```").expect("second block")];
    assert!(between.contains("users"), "{between}");
    assert!(
        blocks[1].contains("kubectl krew install kfsched"),
        "{}",
        blocks[1]
    );
    assert!(blocks[1].contains("kubectl kfsched init "), "{}", blocks[1]);
}
