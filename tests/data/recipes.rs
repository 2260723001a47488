//! The guide's recipes (docs/guide.md, section Recipes): each policy
//! snippet, read from the guide itself, is valid without warnings, and
//! rewrites `testdata/recipes/<name>/input.yaml` to `expected.yaml`; a
//! second rewrite changes nothing. Every recipe has its fixture and every
//! fixture its recipe. `KFSCHED_BLESS=1` rewrites `expected.yaml`.

use kfsched::policy::Policy;
use kfsched::rewrite::process;
use libtest_mimic::Trial;

use crate::support::{recipes, root, show_diff};
use crate::{ensure, trial};

/// The recipes the guide must have (what users of KFP ask for).
const REQUIRED: &[&str] = &[
    "kueue-queue-name",
    "no-disruption",
    "spot-anti-affinity",
    "gpu-runtime-class",
];

pub fn trials() -> Vec<Trial> {
    let all = recipes();
    let names: Vec<String> = all.iter().map(|(n, _)| n.clone()).collect();
    let mut out = vec![trial(
        "recipe::every_recipe_has_a_fixture".into(),
        move || {
            for r in REQUIRED {
                ensure(names.iter().any(|n| n == r), || {
                    format!("docs/guide.md has no recipe {r}")
                })?;
            }
            let dirs: Vec<String> = std::fs::read_dir(root().join("testdata/recipes"))
                .map_err(|e| format!("testdata/recipes: {e}"))?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            for d in &dirs {
                ensure(names.contains(d), || {
                    format!("testdata/recipes/{d} has no recipe in docs/guide.md")
                })?;
            }
            for n in &names {
                ensure(dirs.contains(n), || {
                    format!("the recipe {n} has no fixture testdata/recipes/{n}")
                })?;
            }
            Ok(())
        },
    )];
    for (name, policy) in all {
        out.push(trial(format!("recipe::{name}"), move || {
            rewrites_its_fixture(&name, &policy)
        }));
    }
    out
}

fn rewrites_its_fixture(name: &str, text: &str) -> Result<(), String> {
    let policy = Policy::from_bytes(&format!("docs/guide.md#{name}"), text.as_bytes())
        .map_err(|e| format!("the recipe {name} is not a valid policy:\n{e}"))?;
    ensure(policy.warnings.is_empty(), || {
        format!("the recipe {name} draws warnings: {:?}", policy.warnings)
    })?;
    let dir = root().join("testdata/recipes").join(name);
    let input = std::fs::read(dir.join("input.yaml")).map_err(|e| format!("{name}: {e}"))?;
    let out = process("input.yaml", &input, &policy).map_err(|d| format!("{name}: {d:?}"))?;
    let got = out
        .text(&input)
        .ok_or(format!("{name}: the recipe changes nothing"))?;
    if std::env::var_os("KFSCHED_BLESS").is_some() {
        std::fs::write(dir.join("expected.yaml"), &got).expect("bless");
    }
    let want = std::fs::read_to_string(dir.join("expected.yaml")).unwrap_or_default();
    ensure(got == want, || {
        format!("{name}:\n{}", show_diff(&want, &got))
    })?;
    let again =
        process("expected.yaml", got.as_bytes(), &policy).map_err(|d| format!("{name}: {d:?}"))?;
    ensure(again.output.is_none(), || {
        format!("{name}: a second rewrite changes the file")
    })
}
