//! The Python wheels (SPEC §5), as `scripts/release.sh --wheel` builds them
//! from the same build as the archives: their tags and metadata checked by
//! twine and auditwheel, the crate's version, the binaries they carry, the
//! x86_64 wheel installed into a fresh virtual environment with no cargo on
//! PATH and run (every offline CLI case, through `kubectl-kfsched` and through
//! the `kfsched` launcher), the aarch64 wheel installed for its platform and
//! run under qemu, and a broken install saying how to repair it.
//!
//! The wheels come from `$KFSCHED_WHEEL_DIST` (the `--out` directory of
//! `scripts/release.sh --wheel`); unset, these tests say so and return; set,
//! the wheel of every Linux target of `$KFSCHED_RELEASE_TARGETS` must be
//! there. twine and auditwheel come from `scripts/release.sh --setup`.

use std::path::{Path, PathBuf};

use super::release::{Runner, cli_cases, elf, plain, qemu, release_tool, tag};
use super::{Out, run};
use crate::support::root;

/// The crate's version as Python spells it (PEP 440): `1.2.0-rc.1` is `1.2.0rc1`.
pub(super) fn python_version() -> String {
    let v = env!("CARGO_PKG_VERSION");
    let Some((base, pre)) = v.split_once('-') else {
        return v.to_string();
    };
    let (kind, n) = pre.split_once('.').unwrap_or((pre, "0"));
    let kind = match kind {
        "alpha" => "a",
        "beta" => "b",
        "rc" => "rc",
        other => panic!("no PEP 440 spelling for the pre-release {other:?} of {v}"),
    };
    format!("{base}{kind}{n}")
}

/// `(rust target, wheel arch)` of the Linux wheels.
const LINUX: [(&str, &str); 2] = [
    ("x86_64-unknown-linux-musl", "x86_64"),
    ("aarch64-unknown-linux-musl", "aarch64"),
];

pub(super) struct Wheels {
    pub(super) dir: PathBuf,
    arches: Vec<&'static str>,
}

impl Wheels {
    pub(super) fn get(test: &str) -> Option<Wheels> {
        let Some(dir) = std::env::var_os("KFSCHED_WHEEL_DIST").filter(|v| !v.is_empty()) else {
            eprintln!(
                "{test}: skipped: KFSCHED_WHEEL_DIST is unset (build the wheels with \
                 `scripts/release.sh --wheel --target TRIPLE --out DIR` and set it to DIR)"
            );
            return None;
        };
        let targets = std::env::var("KFSCHED_RELEASE_TARGETS").unwrap_or_default();
        let arches = LINUX
            .iter()
            .filter(|(t, _)| targets.trim().is_empty() || targets.contains(t))
            .map(|(_, a)| *a)
            .collect();
        let w = Wheels {
            dir: PathBuf::from(dir),
            arches,
        };
        for a in &w.arches {
            w.wheel(a);
        }
        Some(w)
    }

    /// The file name maturin gives the static Linux wheel of `arch`.
    fn name(arch: &str) -> String {
        format!(
            "kfsched-{}-py3-none-manylinux2014_{arch}.manylinux_2_17_{arch}.musllinux_1_2_{arch}.whl",
            python_version()
        )
    }

    /// The wheel of `arch`; its absence fails the test.
    #[track_caller]
    pub(super) fn wheel(&self, arch: &str) -> PathBuf {
        let p = self.dir.join(Self::name(arch));
        if !p.is_file() {
            let there: Vec<String> = std::fs::read_dir(&self.dir)
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| n.ends_with(".whl"))
                        .collect()
                })
                .unwrap_or_default();
            panic!(
                "{} is missing (wheels there: {there:?}): KFSCHED_WHEEL_DIST is set, so the \
                 wheel of the crate's version {} for every Linux target must be there \
                 (scripts/release.sh --wheel --target TRIPLE --out {})",
                p.display(),
                env!("CARGO_PKG_VERSION"),
                self.dir.display()
            );
        }
        p
    }

    fn has(&self, arch: &str) -> bool {
        self.arches.contains(&arch)
    }
}

/// A file of a wheel (a zip archive).
fn member(wheel: &Path, name: &str) -> String {
    let out = run(plain("unzip").arg("-p").arg(wheel).arg(name), None);
    out.ok();
    out.stdout
}

/// `python3` as the tests find it: `$KFSCHED_PYTHON`, else on PATH.
pub(super) fn python() -> PathBuf {
    super::tool("KFSCHED_PYTHON", "python3")
}

/// A fresh virtual environment in `dir`; returns its `bin` directory.
pub(super) fn venv(dir: &Path) -> PathBuf {
    run(
        std::process::Command::new(python())
            .args(["-m", "venv"])
            .arg(dir),
        None,
    )
    .ok();
    dir.join("bin")
}

/// pip of the venv whose `bin` is `bin`, with no index: only `find_links`.
pub(super) fn pip_install(bin: &Path, find_links: &Path, args: &[&str]) -> Out {
    let out = run(
        std::process::Command::new(bin.join("python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg("--no-index")
            .arg("--find-links")
            .arg(find_links)
            .args(args),
        None,
    );
    out.ok();
    out
}

/// A command with only the venv's `bin` and the system's directories on
/// PATH: no cargo, no rustc.
fn in_venv(bin: &Path, program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
    let mut c = plain(program);
    c.env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("VIRTUAL_ENV", bin.parent().expect("venv"));
    c
}

#[test]
#[ignore = "needs the wheels: scripts/release.sh --wheel, then KFSCHED_WHEEL_DIST"]
fn the_wheels_carry_the_crates_version_tags_twine_and_auditwheel_accept() {
    let Some(wheels) = Wheels::get("wheel metadata") else {
        return;
    };
    let twine = release_tool("zig-venv/bin/twine");
    let auditwheel = release_tool("zig-venv/bin/auditwheel");
    let version = python_version();
    for (target, arch) in LINUX.iter().filter(|(_, a)| wheels.has(a)) {
        let wheel = wheels.wheel(arch);
        let check = run(plain(&twine).args(["check", "--strict"]).arg(&wheel), None);
        check.ok();
        assert!(check.stdout.contains("PASSED"), "{check}");
        let show = run(plain(&auditwheel).arg("show").arg(&wheel), None);
        show.ok();
        let said = show.all().split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            said.contains("The wheel requires no external shared libraries!"),
            "{show}"
        );
        // The oldest glibc the binaries allow, which the manylinux2014 (glibc 2.17) tag
        // must not undercut.
        let glibc_minor = said
            .split("is consistent with the following platform tag: \"manylinux_2_")
            .nth(1)
            .and_then(|rest| rest.split('_').next())
            .and_then(|n| n.parse::<u32>().ok());
        assert!(
            glibc_minor.is_some_and(|n| n <= 17),
            "{}: auditwheel's tag is newer than manylinux2014:\n{show}",
            wheel.display()
        );
        let info = format!("kfsched-{version}.dist-info");
        let tags: Vec<String> = member(&wheel, &format!("{info}/WHEEL"))
            .lines()
            .filter_map(|l| l.strip_prefix("Tag: "))
            .map(String::from)
            .collect();
        assert_eq!(
            tags,
            [
                format!("py3-none-manylinux2014_{arch}"),
                format!("py3-none-manylinux_2_17_{arch}"),
                format!("py3-none-musllinux_1_2_{arch}"),
            ]
        );
        let metadata = member(&wheel, &format!("{info}/METADATA"));
        assert!(
            metadata.lines().any(|l| l == format!("Version: {version}")),
            "{}: METADATA says {:?}, the crate is {}",
            wheel.display(),
            metadata.lines().find(|l| l.starts_with("Version:")),
            env!("CARGO_PKG_VERSION")
        );
        assert!(metadata.lines().any(|l| l == "Name: kfsched"));
        assert!(metadata.lines().any(|l| l == "Requires-Python: >=3.9"));
        let listed = run(plain("unzip").arg("-Z1").arg(&wheel), None);
        listed.ok();
        let data = format!("kfsched-{version}.data/scripts");
        for want in [
            format!("{data}/kubectl-kfsched"),
            format!("{data}/kubectl_complete-kfsched"),
            format!("{data}/kfsched"),
            "kfsched/__init__.py".into(),
            "kfsched/py.typed".into(),
            format!("{info}/licenses/LICENSE"),
        ] {
            assert!(
                listed.stdout.lines().any(|l| l == want),
                "{want} is not in {}:\n{}",
                wheel.display(),
                listed.stdout
            );
        }
        // The binaries are the archive's, byte for byte: one build made both.
        let scratch = tempfile::tempdir().expect("tempdir");
        run(
            plain("unzip")
                .arg("-q")
                .arg(&wheel)
                .arg(format!("{data}/*"))
                .arg("-d")
                .arg(scratch.path()),
            None,
        )
        .ok();
        let bin = scratch.path().join(&data);
        let archive = wheels
            .dir
            .join(format!("kubectl-kfsched_{}_{target}.tar.gz", tag()));
        if archive.is_file() {
            let unpacked = super::release::unpack(&archive, scratch.path());
            for b in ["kubectl-kfsched", "kubectl_complete-kfsched"] {
                assert!(
                    std::fs::read(bin.join(b)).expect("wheel binary")
                        == std::fs::read(unpacked.join(b)).expect("archive binary"),
                    "{b} differs between {} and {}",
                    wheel.display(),
                    archive.display()
                );
            }
        }
        let machine = if *arch == "x86_64" {
            "Advanced Micro Devices X86-64"
        } else {
            "AArch64"
        };
        for b in ["kubectl-kfsched", "kubectl_complete-kfsched", "kfsched"] {
            let (m, interp, needed, debug) = elf(&bin.join(b));
            assert_eq!(
                (m.as_str(), interp, needed, debug),
                (machine, false, Vec::<String>::new(), Vec::<String>::new()),
                "{b} of {}: static and stripped",
                wheel.display()
            );
        }
    }
}

#[test]
fn the_python_package_and_the_hook_repository_carry_the_crates_version() {
    let version = python_version();
    // The wheel takes its version from Cargo.toml: pyproject.toml must not set one.
    let pyproject = std::fs::read_to_string(root().join("pyproject.toml")).expect("pyproject");
    assert!(
        pyproject.contains("dynamic = [\"version\"]") && !pyproject.contains("\nversion ="),
        "pyproject.toml must take the crate's version (dynamic), not set its own"
    );
    let hooks = std::fs::read_to_string(root().join("pre-commit-hooks/pyproject.toml"))
        .expect("pre-commit-hooks/pyproject.toml");
    assert!(
        hooks
            .lines()
            .any(|l| l == format!("version = \"{version}\""))
            && hooks.contains(&format!("dependencies = [\"kfsched=={version}\"]")),
        "pre-commit-hooks/pyproject.toml must be version {version} and pin kfsched=={version} \
         (the crate's version, {}):\n{hooks}",
        env!("CARGO_PKG_VERSION")
    );
    // The hooks are the source-built ones, with language: python.
    let ours = std::fs::read_to_string(root().join(".pre-commit-hooks.yaml")).expect("hooks");
    let wheel = std::fs::read_to_string(root().join("pre-commit-hooks/.pre-commit-hooks.yaml"))
        .expect("wheel hooks");
    let body = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.replace("language: rust", "language: python"))
            .collect()
    };
    assert_eq!(
        body(&wheel),
        body(&ours),
        "pre-commit-hooks/.pre-commit-hooks.yaml must offer the hooks of .pre-commit-hooks.yaml, \
         with language: python"
    );
}

#[test]
#[ignore = "needs the wheels: scripts/release.sh --wheel, then KFSCHED_WHEEL_DIST"]
fn the_x86_64_wheel_installs_into_a_fresh_venv_without_cargo_and_runs() {
    let Some(wheels) = Wheels::get("x86_64 wheel install") else {
        return;
    };
    assert!(wheels.has("x86_64"), "no x86_64 wheel among the targets");
    let scratch = tempfile::tempdir().expect("tempdir");
    let bin = venv(&scratch.path().join("venv"));
    let links = scratch.path().join("links");
    std::fs::create_dir_all(&links).expect("mkdir");
    let wheel = wheels.wheel("x86_64");
    std::fs::copy(&wheel, links.join(wheel.file_name().expect("name"))).expect("copy");
    pip_install(&bin, &links, &[&format!("kfsched=={}", python_version())]);
    let no_cargo = run(
        in_venv(&bin, "sh").args(["-c", "command -v cargo rustc"]),
        None,
    );
    assert_ne!(no_cargo.code, 0, "cargo is on the venv's PATH: {no_cargo}");

    let version = format!("kfsched {}\n", tag());
    for argv in [
        &["kubectl-kfsched", "version"][..],
        &["kfsched", "version"],
        &["kfsched", "--version"],
        &["python", "-m", "kfsched", "version"],
    ] {
        let out = run(in_venv(&bin, argv[0]).args(&argv[1..]), None);
        out.ok();
        assert_eq!(out.stdout, version, "{argv:?}");
    }
    let out = run(
        in_venv(&bin, "python").args(["-c", "import kfsched; print(kfsched.__version__)"]),
        None,
    );
    out.ok();
    assert_eq!(out.stdout.trim(), python_version());
    let comp = run(
        in_venv(&bin, "kubectl_complete-kfsched").args(["node", "dr"]),
        None,
    );
    comp.ok();
    assert!(comp.stdout.starts_with("drain\t"), "{comp}");

    // Every offline CLI case, through the plugin and through the launcher:
    // the same output and exit code.
    for name in ["kubectl-kfsched", "kfsched"] {
        let runner = Runner {
            prefix: Vec::new(),
            bin: bin.join(name),
        };
        let (failures, runs) = cli_cases(&runner);
        assert!(
            failures.is_empty(),
            "{name}: {} of {runs} runs failed:\n{}",
            failures.len(),
            failures.join("\n\n")
        );
    }

    // A broken install says how to repair it, from the launcher and from Python.
    let plugin = bin.join("kubectl-kfsched");
    let api = "import kfsched\ntry:\n    kfsched.validate()\nexcept kfsched.InstallError as e:\n    print(e.exit_code, e)\n";
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = run(in_venv(&bin, "kfsched").arg("version"), None);
    assert_eq!(out.code, 126, "{out}");
    assert!(
        out.stderr.contains("reinstall kfsched")
            && out.stderr.contains("pip install --force-reinstall"),
        "{out}"
    );
    let out = run(in_venv(&bin, "python").args(["-c", api]), None);
    out.ok();
    assert!(
        out.stdout.starts_with("126 ")
            && out.stdout.contains("is not executable")
            && out.stdout.contains(&format!(
                "pip install --force-reinstall kfsched=={}",
                python_version()
            )),
        "{out}"
    );
    std::fs::remove_file(&plugin).expect("rm");
    let out = run(in_venv(&bin, "kfsched").arg("version"), None);
    assert_eq!(out.code, 127, "{out}");
    assert!(out.stderr.contains("reinstall kfsched"), "{out}");
    let out = run(in_venv(&bin, "python").args(["-c", api]), None);
    out.ok();
    assert!(
        out.stdout.starts_with("127 ")
            && out
                .stdout
                .contains("binary of the kfsched package is missing")
            && out.stdout.contains("pip install --force-reinstall"),
        "{out}"
    );
    let out = run(
        in_venv(&bin, "python").args(["-m", "kfsched", "version"]),
        None,
    );
    assert_eq!(out.code, 127, "{out}");
    assert!(
        out.stderr
            .starts_with("kfsched: error: the kubectl-kfsched binary"),
        "{out}"
    );
}

#[test]
#[ignore = "needs the wheels: scripts/release.sh --wheel, then KFSCHED_WHEEL_DIST"]
fn the_aarch64_wheel_installs_for_its_platform_and_runs_under_qemu() {
    let Some(wheels) = Wheels::get("aarch64 wheel install") else {
        return;
    };
    assert!(wheels.has("aarch64"), "no aarch64 wheel among the targets");
    let scratch = tempfile::tempdir().expect("tempdir");
    let links = scratch.path().join("links");
    std::fs::create_dir_all(&links).expect("mkdir");
    let wheel = wheels.wheel("aarch64");
    std::fs::copy(&wheel, links.join(wheel.file_name().expect("name"))).expect("copy");
    // pip picks the wheel by its tags for an aarch64 glibc and an aarch64 musl system.
    for platform in ["manylinux2014_aarch64", "musllinux_1_2_aarch64"] {
        let target = scratch.path().join(platform);
        let out = run(
            std::process::Command::new(python())
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(["--no-index", "--only-binary=:all:", "--platform", platform])
                .arg("--find-links")
                .arg(&links)
                .arg("--target")
                .arg(&target)
                .arg(format!("kfsched=={}", python_version())),
            None,
        );
        out.ok();
        let bin = target.join("bin/kubectl-kfsched");
        assert!(bin.is_file(), "{platform}: {} not installed", bin.display());
        let v = run(plain(qemu()).arg(&bin).arg("version"), None);
        v.ok();
        assert_eq!(v.stdout, format!("kfsched {}\n", tag()), "{platform}");
        let (machine, ..) = elf(&bin);
        assert_eq!(machine, "AArch64");
    }
    let runner = Runner {
        prefix: vec![qemu().into()],
        bin: scratch
            .path()
            .join("manylinux2014_aarch64/bin/kubectl-kfsched"),
    };
    let (failures, runs) = cli_cases(&runner);
    assert!(
        failures.is_empty(),
        "{} of {runs} runs failed under qemu-aarch64:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// What pip builds from the sdist (`pip install kfsched` where no wheel
/// fits, `pip install .`, a hook repository built from source) is the
/// stripped `dist` build the wheels ship, not cargo's `release` profile
/// with its line tables (an 80 MB binary).
#[test]
#[ignore = "needs maturin from scripts/release.sh --setup --wheel; builds kfsched from source (minutes)"]
fn the_source_build_pip_runs_is_stripped_like_the_wheels() {
    let maturin = release_tool("zig-venv/bin/maturin");
    let python = maturin.with_file_name("python");
    let scratch = tempfile::tempdir().expect("tempdir");
    run(
        std::process::Command::new(&maturin)
            .arg("sdist")
            .arg("--out")
            .arg(scratch.path())
            .current_dir(root()),
        None,
    )
    .ok();
    let sdist = scratch
        .path()
        .join(format!("kfsched-{}.tar.gz", python_version()));
    assert!(sdist.is_file(), "{} was not written", sdist.display());
    // pip's PEP 517 build of the sdist, as `pip install` runs it, with the
    // release tools' maturin rather than one from an index.
    let wheels = scratch.path().join("wheels");
    run(
        std::process::Command::new(&python)
            .args([
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                "-w",
            ])
            .arg(&wheels)
            .arg(&sdist)
            // A fresh target directory: the sdist's files carry the archive's
            // fixed mtimes, so cargo would take an earlier build of other
            // sources for fresh.
            .env("CARGO_TARGET_DIR", scratch.path().join("target"))
            // maturin's build backend runs `maturin` from PATH, as it
            // would from the build environment pip makes.
            .env("PATH", {
                let venv = maturin.parent().expect("venv bin").to_path_buf();
                let rest = std::env::var_os("PATH").unwrap_or_default();
                std::env::join_paths(std::iter::once(venv).chain(std::env::split_paths(&rest)))
                    .expect("PATH")
            }),
        None,
    )
    .ok();
    let wheel = std::fs::read_dir(&wheels)
        .expect("wheels")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("pip built no wheel");
    let data = format!("kfsched-{}.data/scripts", python_version());
    let unpacked = scratch.path().join("unpacked");
    run(
        plain("unzip")
            .arg("-q")
            .arg(&wheel)
            .arg(format!("{data}/*"))
            .arg("-d")
            .arg(&unpacked),
        None,
    )
    .ok();
    for b in ["kubectl-kfsched", "kubectl_complete-kfsched", "kfsched"] {
        let bin = unpacked.join(&data).join(b);
        let (_, _, _, debug) = elf(&bin);
        assert_eq!(
            debug,
            Vec::<String>::new(),
            "{b} built from the sdist keeps debug info or symbols"
        );
        let size = std::fs::metadata(&bin).expect("binary").len();
        assert!(
            size < 25_000_000,
            "{b} built from the sdist is {size} bytes"
        );
    }
}
