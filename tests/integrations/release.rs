//! Release archives (SPEC §5), as `scripts/release.sh --cross` builds them:
//! what krew expects inside each, static binaries without debug info, the
//! offline CLI cases run by the x86_64 binary natively and by the aarch64 one
//! under qemu-aarch64, the manifest rendered from them validated and installed
//! by krew for both Linux architectures, and the GitHub workflows checked by
//! actionlint.
//!
//! The archives come from `$KFSCHED_RELEASE_DIST`, the output directory of
//! `scripts/release.sh --cross --out DIR`. Unset, the tests that need them say
//! so and return; set, every archive of `$KFSCHED_RELEASE_TARGETS` (default:
//! the three targets `--cross` builds) must be there, or they fail.
//! `$KFSCHED_RELEASE_TOOLS` (default `.cache/release-tools`) holds krew built
//! for linux/arm64 and actionlint, `$KFSCHED_QEMU_AARCH64` (default
//! `qemu-aarch64` on PATH) runs the aarch64 binaries; `scripts/release.sh
//! --setup` installs them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::krew::{serve, validate};
use super::{Out, Sandbox, built_tool, kubectl, run, tool, toolchain};
use crate::support::{case_dirs, copy_to_temp, golden_dirs, hand_dirs, rel, root, snapshot};

const CROSS_TARGETS: [&str; 3] = [
    "x86_64-unknown-linux-musl",
    "aarch64-unknown-linux-musl",
    "x86_64-pc-windows-gnu",
];

/// Size ceilings, about 1.5 times the sizes built on 2026-12-02 (13.8 MB,
/// 0.4 MB): a build that kept its debug info or symbols is several times larger.
const MAX_PLUGIN_BYTES: u64 = 21_000_000;
const MAX_COMPANION_BYTES: u64 = 800_000;

pub(super) fn tag() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

/// The archives under test, or None (the test is skipped) without `$KFSCHED_RELEASE_DIST`.
struct Dist {
    dir: PathBuf,
    targets: Vec<String>,
}

impl Dist {
    fn get(test: &str) -> Option<Dist> {
        let Some(dir) = std::env::var_os("KFSCHED_RELEASE_DIST").filter(|v| !v.is_empty()) else {
            eprintln!(
                "{test}: skipped: KFSCHED_RELEASE_DIST is unset (build the archives with \
                 `scripts/release.sh --cross --out DIR` and set it to DIR)"
            );
            return None;
        };
        let dir = PathBuf::from(dir);
        assert!(
            dir.is_dir(),
            "KFSCHED_RELEASE_DIST={} is not a directory",
            dir.display()
        );
        let targets = std::env::var("KFSCHED_RELEASE_TARGETS")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| {
                v.split([' ', ','])
                    .filter(|t| !t.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_else(|| CROSS_TARGETS.map(String::from).to_vec());
        let dist = Dist { dir, targets };
        for t in &dist.targets {
            dist.archive(t);
        }
        Some(dist)
    }

    /// The archive of `target`; its absence fails the test.
    #[track_caller]
    fn archive(&self, target: &str) -> PathBuf {
        let ext = if target.contains("windows") {
            "zip"
        } else {
            "tar.gz"
        };
        let p = self
            .dir
            .join(format!("kubectl-kfsched_{}_{target}.{ext}", tag()));
        assert!(
            p.is_file(),
            "{} is missing: KFSCHED_RELEASE_DIST is set, so every archive of {:?} must be there \
             (scripts/release.sh --cross --out {})",
            p.display(),
            self.targets,
            self.dir.display()
        );
        p
    }

    fn has(&self, target: &str) -> bool {
        self.targets.iter().any(|t| t == target)
    }
}

fn exe(target: &str) -> &'static str {
    if target.contains("windows") {
        ".exe"
    } else {
        ""
    }
}

/// A command with a cleared environment: the system's PATH directories only.
pub(super) fn plain(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null());
    c
}

/// Unpacks `archive` into a new directory under `into`.
pub(super) fn unpack(archive: &Path, into: &Path) -> PathBuf {
    let name = archive
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let dir = into.join(name.trim_end_matches(".tar.gz").trim_end_matches(".zip"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let out = if name.ends_with(".zip") {
        run(
            plain("unzip").arg("-q").arg(archive).arg("-d").arg(&dir),
            None,
        )
    } else {
        run(
            plain("tar").arg("-xzf").arg(archive).arg("-C").arg(&dir),
            None,
        )
    };
    out.ok();
    dir
}

/// The names at the top of `archive`, sorted, with `tar -tv`'s mode column
/// (for zip archives, the mode is not recorded the same way: "-").
fn listing(archive: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = if archive.to_string_lossy().ends_with(".zip") {
        let l = run(plain("unzip").arg("-Z1").arg(archive), None);
        l.ok();
        l.stdout
            .lines()
            .map(|n| (n.to_string(), "-".to_string()))
            .collect()
    } else {
        let l = run(plain("tar").arg("-tvzf").arg(archive), None);
        l.ok();
        l.stdout
            .lines()
            .map(|line| {
                let cols: Vec<&str> = line.split_whitespace().collect();
                (
                    cols.last().copied().unwrap_or_default().to_string(),
                    cols.first().copied().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    files.sort();
    files
}

fn sha256(path: &Path) -> String {
    let out = run(plain("sha256sum").arg(path), None);
    out.ok();
    out.stdout
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Runs a release binary, directly or under an emulator.
pub(super) struct Runner {
    /// The emulator and its arguments, if any.
    pub(super) prefix: Vec<OsString>,
    pub(super) bin: PathBuf,
}

/// One run: exit code, stdout bytes, stderr.
struct Ran {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
}

impl Runner {
    /// Runs the binary in `cwd` with a cleared environment (system PATH,
    /// HOME=cwd), as the offline tests run the binary under test.
    fn run(&self, cwd: &Path, args: &[&str], stdin: Option<&[u8]>) -> Ran {
        use std::io::Write;
        let mut c = match self.prefix.split_first() {
            Some((emulator, rest)) => {
                let mut c = plain(emulator);
                c.args(rest).arg(&self.bin);
                c
            }
            None => plain(&self.bin),
        };
        c.args(args)
            .env("HOME", cwd)
            .current_dir(cwd)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {c:?}: {e}"));
        if let Some(input) = stdin {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(input)
                .expect("write stdin");
        }
        let o = child.wait_with_output().expect("wait");
        Ran {
            code: o.status.code().unwrap_or(-1),
            stdout: o.stdout,
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// The offline CLI cases of tests/offline, run by `runner`: every SDK-compiled
/// golden pair (file and stdin to stdout, byte for byte; `--check` on both
/// sides), every hand-written case, every bad-input case (exit 2, its exact
/// stderr, nothing written) and `version`. Returns the failures and the
/// number of runs.
pub(super) fn cli_cases(runner: &Runner) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let mut runs = 0;
    let mut check = |what: String, ok: bool, detail: &dyn Fn() -> String| {
        runs += 1;
        if !ok {
            failures.push(format!("{what}: {}", detail()));
        }
    };

    let golden = golden_dirs();
    assert!(golden.len() >= 37, "{} golden cases", golden.len());
    for dir in &golden {
        let want = std::fs::read(dir.join("expected.yaml")).expect("expected.yaml");
        let plain_yaml = std::fs::read(dir.join("plain.yaml")).expect("plain.yaml");
        let r = runner.run(dir, &["rewrite", "-p", "policy.yaml", "plain.yaml"], None);
        check(
            format!("{} rewrite plain.yaml", rel(dir)),
            r.code == 0 && r.stdout == want,
            &|| format!("exit {}, stdout differs: {}", r.code, r.stderr),
        );
        let r = runner.run(dir, &["rewrite", "-p", "policy.yaml"], Some(&plain_yaml));
        check(
            format!("{} rewrite < plain.yaml", rel(dir)),
            r.code == 0 && r.stdout == want,
            &|| format!("exit {}, stdout differs: {}", r.code, r.stderr),
        );
        let r = runner.run(
            dir,
            &["rewrite", "--check", "-p", "policy.yaml", "expected.yaml"],
            None,
        );
        check(
            format!("{} rewrite --check expected.yaml", rel(dir)),
            r.code == 0,
            &|| format!("exit {} (want 0): {}", r.code, r.stderr),
        );
        let r = runner.run(
            dir,
            &["rewrite", "--check", "-p", "policy.yaml", "plain.yaml"],
            None,
        );
        check(
            format!("{} rewrite --check plain.yaml", rel(dir)),
            r.code == 1,
            &|| format!("exit {} (want 1): {}", r.code, r.stderr),
        );
    }

    let hand = hand_dirs();
    assert!(hand.len() >= 8, "{} hand-written cases", hand.len());
    for dir in &hand {
        let want = std::fs::read(dir.join("expected.yaml")).expect("expected.yaml");
        let r = runner.run(dir, &["rewrite", "-p", "policy.yaml", "input.yaml"], None);
        check(
            format!("{} rewrite input.yaml", rel(dir)),
            r.code == 0 && r.stdout == want,
            &|| format!("exit {}, stdout differs: {}", r.code, r.stderr),
        );
    }

    let bad = case_dirs("testdata/bad", "policy.yaml");
    assert!(bad.len() >= 50, "{} bad-input cases", bad.len());
    for dir in &bad {
        let tmp = copy_to_temp(dir);
        let before = snapshot(tmp.path());
        let r = runner.run(
            tmp.path(),
            &["rewrite", "-i", "-p", "policy.yaml", "input.yaml"],
            None,
        );
        let want = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
        let unchanged = snapshot(tmp.path()) == before;
        check(
            format!("{} rewrite -i", rel(dir)),
            r.code == 2 && r.stderr == want && r.stdout.is_empty() && unchanged,
            &|| {
                format!(
                    "exit {} (want 2), files unchanged: {unchanged}\n--- want\n{want}--- got\n{}",
                    r.code, r.stderr
                )
            },
        );
    }

    let r = runner.run(&root(), &["version"], None);
    check(
        "version".to_string(),
        r.code == 0 && r.stdout == format!("kfsched {}\n", tag()).into_bytes(),
        &|| format!("exit {}: {}", r.code, String::from_utf8_lossy(&r.stdout)),
    );
    (failures, runs)
}

/// ELF facts from readelf: (machine, has an interpreter, NEEDED libraries,
/// debug or symbol-table sections).
pub(super) fn elf(bin: &Path) -> (String, bool, Vec<String>, Vec<String>) {
    let h = run(plain("readelf").arg("-h").arg(bin), None);
    h.ok();
    let machine = h
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("Machine:"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let l = run(plain("readelf").arg("-lW").arg(bin), None);
    l.ok();
    let interp = l.stdout.contains("INTERP");
    let d = run(plain("readelf").arg("-dW").arg(bin), None);
    d.ok();
    let needed = d
        .stdout
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .map(|l| l.trim().to_string())
        .collect();
    let s = run(plain("readelf").arg("-SW").arg(bin), None);
    s.ok();
    let sections = s
        .stdout
        .split_whitespace()
        .filter(|w| w.starts_with(".debug") || *w == ".symtab" || *w == ".strtab")
        .map(String::from)
        .collect();
    (machine, interp, needed, sections)
}

/// The DLLs a PE executable imports (objdump -p).
fn dlls(exe: &Path) -> Vec<String> {
    let p = run(plain("objdump").arg("-p").arg(exe), None);
    p.ok();
    assert!(
        p.stdout.contains("pei-x86-64"),
        "{}: not PE x86-64",
        exe.display()
    );
    let mut names: Vec<String> = p
        .stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("DLL Name:"))
        .map(|n| n.trim().to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
#[ignore = "needs the release archives: scripts/release.sh --cross, then KFSCHED_RELEASE_DIST"]
fn release_archives_hold_what_krew_expects_and_static_stripped_binaries() {
    let Some(dist) = Dist::get("release archives") else {
        return;
    };
    let scratch = tempfile::tempdir().expect("tempdir");
    let sums = std::fs::read_to_string(dist.dir.join("SHA256SUMS")).expect("SHA256SUMS");
    let license = std::fs::read(root().join("LICENSE")).expect("LICENSE");
    for target in &dist.targets {
        let archive = dist.archive(target);
        let name = archive
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let sum = sha256(&archive);
        // The checksum files, in `sha256sum -c` format.
        let line = format!("{sum}  {name}\n");
        let own = std::fs::read_to_string(dist.dir.join(format!("{name}.sha256")))
            .unwrap_or_else(|e| panic!("{name}.sha256: {e}"));
        assert_eq!(own, line, "{name}.sha256");
        assert!(sums.contains(&line), "SHA256SUMS lacks {line}");
        let check = run(
            plain("sha256sum")
                .args(["-c", "--ignore-missing", "SHA256SUMS"])
                .current_dir(&dist.dir),
            None,
        );
        check.ok();
        assert!(check.stdout.contains(&format!("{name}: OK")), "{check}");

        // Binary and companion at the top level, with LICENSE (and README.md).
        let x = exe(target);
        let files = listing(&archive);
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        let (plugin, companion) = (
            format!("kubectl-kfsched{x}"),
            format!("kubectl_complete-kfsched{x}"),
        );
        let mut want = vec!["LICENSE", "README.md", plugin.as_str(), companion.as_str()];
        want.sort();
        assert_eq!(names, want, "{name}");
        if x.is_empty() {
            for (n, mode) in &files {
                let executable = n.starts_with("kubectl");
                assert_eq!(
                    mode,
                    if executable {
                        "-rwxr-xr-x"
                    } else {
                        "-rw-r--r--"
                    },
                    "{name}: mode of {n}"
                );
            }
        }
        let dir = unpack(&archive, scratch.path());
        assert_eq!(
            std::fs::read(dir.join("LICENSE")).expect("LICENSE"),
            license,
            "{name}: LICENSE"
        );

        // Static, stripped, small.
        for (bin, max) in [
            (&plugin, MAX_PLUGIN_BYTES),
            (&companion, MAX_COMPANION_BYTES),
        ] {
            let path = dir.join(bin);
            let size = std::fs::metadata(&path).expect("size").len();
            eprintln!("{name}: {bin} {size} bytes");
            assert!(size <= max, "{name}: {bin} is {size} bytes (at most {max})");
            if target.contains("linux") {
                let ldd = run(plain("ldd").arg(&path), None);
                assert!(
                    ldd.all().contains("not a dynamic executable")
                        || ldd.all().contains("statically linked"),
                    "{name}: ldd {bin}\n{ldd}"
                );
                let (machine, interp, needed, sections) = elf(&path);
                let want_machine = if target.starts_with("aarch64") {
                    "AArch64"
                } else {
                    "Advanced Micro Devices X86-64"
                };
                assert_eq!(machine, want_machine, "{name}: {bin}");
                assert!(!interp, "{name}: {bin} asks for a dynamic loader");
                assert!(needed.is_empty(), "{name}: {bin} needs {needed:?}");
                assert!(sections.is_empty(), "{name}: {bin} keeps {sections:?}");
            } else if target.contains("windows") {
                // Only DLLs every Windows has: no MinGW runtime (libgcc,
                // libwinpthread, libstdc++) beside the .exe.
                let names = dlls(&path);
                assert!(!names.is_empty(), "{name}: {bin} imports nothing?");
                let foreign: Vec<&String> = names
                    .iter()
                    .filter(|d| {
                        let d = d.to_ascii_lowercase();
                        d.starts_with("lib") || d.contains("gcc") || d.contains("pthread")
                    })
                    .collect();
                assert!(
                    foreign.is_empty(),
                    "{name}: {bin} imports {foreign:?} of {names:?}"
                );
            }
        }
        let archive_size = std::fs::metadata(&archive).expect("size").len();
        eprintln!("{name}: {archive_size} bytes");

        // Packing is reproducible: the same binaries and SOURCE_DATE_EPOCH give the same bytes.
        let again = scratch.path().join(format!("again-{target}"));
        let epoch = archive_epoch(&archive);
        let r = run(
            plain(root().join("scripts/release.sh"))
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("SOURCE_DATE_EPOCH", epoch.to_string())
                .args(["--target", target, "--bin-dir"])
                .arg(&dir)
                .arg("--out")
                .arg(&again),
            None,
        );
        r.ok();
        assert_eq!(
            sha256(&again.join(&name)),
            sum,
            "{name}: packing again differs\n{r}"
        );
    }
}

/// The modification time the archive's entries carry (all the same).
fn archive_epoch(archive: &Path) -> i64 {
    if archive.to_string_lossy().ends_with(".zip") {
        // DOS time, written in UTC.
        let l = run(plain("unzip").arg("-Z").arg("-T").arg(archive), None);
        l.ok();
        let stamp = l
            .stdout
            .lines()
            .find(|l| l.ends_with("LICENSE"))
            .and_then(|l| l.split_whitespace().nth(6))
            .expect("a LICENSE entry")
            .to_string();
        let (d, t) = stamp.split_at(8);
        let r = run(
            plain("date").env("TZ", "UTC").args([
                "-d",
                &format!("{} {}:{}:{}", d, &t[1..3], &t[3..5], &t[5..7]),
                "+%s",
            ]),
            None,
        );
        r.ok();
        r.stdout.trim().parse().expect("epoch")
    } else {
        let l = run(
            plain("tar")
                .env("TZ", "UTC")
                .args(["--full-time", "-tvzf"])
                .arg(archive),
            None,
        );
        l.ok();
        let line = l.stdout.lines().next().expect("an entry").to_string();
        let cols: Vec<&str> = line.split_whitespace().collect();
        let r = run(
            plain("date")
                .env("TZ", "UTC")
                .args(["-d", &format!("{} {}", cols[3], cols[4]), "+%s"]),
            None,
        );
        r.ok();
        r.stdout.trim().parse().expect("epoch")
    }
}

#[test]
#[ignore = "needs the release archives: scripts/release.sh --cross, then KFSCHED_RELEASE_DIST"]
fn the_x86_64_musl_binary_runs_the_offline_cli_cases_and_under_kubectl() {
    let Some(dist) = Dist::get("x86_64 CLI cases") else {
        return;
    };
    let target = "x86_64-unknown-linux-musl";
    assert!(dist.has(target), "{target} is not among {:?}", dist.targets);
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = unpack(&dist.archive(target), scratch.path());
    let runner = Runner {
        prefix: Vec::new(),
        bin: dir.join("kubectl-kfsched"),
    };
    let (failures, runs) = cli_cases(&runner);
    assert!(
        failures.is_empty(),
        "{} of {runs} runs failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );

    // Through the real kubectl, with only the archive's binaries as the plugin.
    let mut sb = Sandbox::new();
    sb.plugin_on_path = false;
    sb.path.push(dir.clone());
    let v = run(sb.cmd(kubectl()).args(["kfsched", "version"]), None);
    v.ok();
    assert_eq!(v.stdout, format!("kfsched {}\n", tag()));
    let list = run(sb.cmd(kubectl()).args(["plugin", "list"]), None);
    list.ok();
    assert!(
        list.stdout
            .contains(&dir.join("kubectl-kfsched").display().to_string()),
        "{list}"
    );
    let comp = run(
        sb.cmd(kubectl())
            .args(["__complete", "kfsched", "node", "dr"]),
        None,
    );
    comp.ok();
    assert_eq!(
        comp.stdout
            .lines()
            .next()
            .and_then(|l| l.split('\t').next()),
        Some("drain"),
        "the archive's companion completes\n{comp}"
    );
}

pub(super) fn qemu() -> PathBuf {
    tool("KFSCHED_QEMU_AARCH64", "qemu-aarch64")
}

#[test]
#[ignore = "needs the release archives: scripts/release.sh --cross, then KFSCHED_RELEASE_DIST"]
fn the_aarch64_musl_binary_runs_the_offline_cli_cases_under_qemu() {
    let Some(dist) = Dist::get("aarch64 CLI cases") else {
        return;
    };
    let target = "aarch64-unknown-linux-musl";
    assert!(dist.has(target), "{target} is not among {:?}", dist.targets);
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = unpack(&dist.archive(target), scratch.path());
    let bin = dir.join("kubectl-kfsched");
    // This host cannot run it by itself: what runs below is the emulated aarch64 binary.
    if !cfg!(target_arch = "aarch64") {
        let native = plain(&bin).arg("version").output();
        assert!(
            native.as_ref().map_or(true, |o| !o.status.success()),
            "{} ran natively on a non-aarch64 host (binfmt_misc?): {native:?}",
            bin.display()
        );
    }
    let runner = Runner {
        prefix: vec![qemu().into()],
        bin,
    };
    let (failures, runs) = cli_cases(&runner);
    assert!(
        failures.is_empty(),
        "{} of {runs} runs failed under qemu-aarch64:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // Completion, as kubectl asks for it through the caveat's link named
    // kubectl_complete-kfsched (qemu's -0 sets that argv[0]; the companion
    // binary itself would exec its aarch64 sibling, which needs binfmt_misc).
    let r = run(
        plain(qemu())
            .arg("-0")
            .arg(dir.join("kubectl_complete-kfsched"))
            .arg(dir.join("kubectl-kfsched"))
            .args(["node", "dr"]),
        None,
    );
    r.ok();
    assert!(r.stdout.starts_with("drain\t"), "{r}");
}

/// A tool of `scripts/release.sh --setup`, in `$KFSCHED_RELEASE_TOOLS`.
#[track_caller]
pub(super) fn release_tool(name: &str) -> PathBuf {
    let dir = std::env::var_os("KFSCHED_RELEASE_TOOLS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".cache/release-tools"));
    let p = dir.join(name);
    assert!(
        p.is_file(),
        "{} not found: run scripts/release.sh --setup (it installs {name} into \
         $KFSCHED_RELEASE_TOOLS, default .cache/release-tools)",
        p.display()
    );
    p
}

#[test]
#[ignore = "needs the release archives and tools: scripts/release.sh --setup and --cross, then KFSCHED_RELEASE_DIST"]
fn krew_validates_the_rendered_manifest_and_installs_both_linux_architectures() {
    let Some(dist) = Dist::get("krew install of the release archives") else {
        return;
    };
    let mut sb = Sandbox::new();
    sb.path.push(
        built_tool("kubectl-krew")
            .parent()
            .expect("tools dir")
            .to_path_buf(),
    );
    sb.path.push(toolchain());
    sb.plugin_on_path = false;
    let tag = tag();

    // The manifest rendered from the archives, served over HTTP for krew's
    // full validation (which installs every platform with KREW_OS/KREW_ARCH).
    let served = sb.path().join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    for target in &dist.targets {
        let archive = dist.archive(target);
        let name = archive.file_name().expect("name");
        std::fs::copy(&archive, served.join(name)).expect("copy archive");
    }
    let port = serve(served.clone());
    let rendered = run(
        sb.cmd(root().join("scripts/release.sh"))
            .args(["--no-build", "--out"])
            .arg(&served)
            .arg("--base-url")
            .arg(format!("http://127.0.0.1:{port}")),
        None,
    );
    rendered.ok();
    let manifest = served.join("plugin.yaml");
    let text = std::fs::read_to_string(&manifest).expect("plugin.yaml");
    let platforms = text.matches("- selector:").count();
    assert_eq!(
        platforms,
        dist.targets.len(),
        "one platform per archive:\n{text}"
    );
    for target in &dist.targets {
        let archive = dist.archive(target);
        let name = archive
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let entry = format!(
            "uri: http://127.0.0.1:{port}/{name}\n    sha256: {}\n",
            sha256(&archive)
        );
        assert!(text.contains(&entry), "plugin.yaml lacks {entry}\n{text}");
    }
    for missing in ["x86_64-apple-darwin", "aarch64-apple-darwin"] {
        assert!(
            rendered.stderr.contains(&format!("{tag}_{missing}.tar.gz")),
            "{missing} is said to be left out\n{rendered}"
        );
    }
    let full = validate(&sb, &manifest, false);
    full.ok();
    assert!(
        full.all()
            .contains(&format!("all {platforms} spec.platforms installed fine")),
        "{full}"
    );

    // linux/amd64: kubectl krew install, then the real kubectl runs the plugin.
    let amd64 = dist.archive("x86_64-unknown-linux-musl");
    let install = run(
        sb.cmd(kubectl())
            .args(["krew", "install", "--manifest"])
            .arg(&manifest)
            .arg("--archive")
            .arg(&amd64),
        None,
    );
    install.ok();
    assert!(
        install.all().contains("Installed plugin: kfsched"),
        "{install}"
    );
    let krew_bin = sb.path().join("krew/bin");
    sb.path.insert(0, krew_bin.clone());
    let v = run(sb.cmd(kubectl()).args(["kfsched", "version"]), None);
    v.ok();
    assert_eq!(v.stdout, format!("kfsched {tag}\n"));
    let (machine, ..) = elf(&krew_bin.join("kubectl-kfsched"));
    assert_eq!(machine, "Advanced Micro Devices X86-64");

    // linux/arm64: krew built for arm64, under qemu, picks the arm64 platform
    // by its own detection and checks the archive against its sha256.
    let arm64 = dist.archive("aarch64-unknown-linux-musl");
    let krew_arm64 = release_tool("krew-linux-arm64");
    let arm_root = sb.path().join("krew-arm64");
    let krew = |args: &[&str], archive: &Path| -> Out {
        run(
            sb.cmd(qemu())
                .env("KREW_ROOT", &arm_root)
                .arg(&krew_arm64)
                .args(args)
                .arg("--manifest")
                .arg(&manifest)
                .arg("--archive")
                .arg(archive),
            None,
        )
    };
    let detected = run(
        sb.cmd(qemu())
            .env("KREW_ROOT", &arm_root)
            .arg(&krew_arm64)
            .arg("version"),
        None,
    );
    detected.ok();
    assert!(
        detected
            .stdout
            .lines()
            .any(|l| l.starts_with("DetectedPlatform") && l.trim_end().ends_with("linux/arm64")),
        "{detected}"
    );
    // The amd64 archive does not pass as arm64's: its sha256 is another platform's.
    let wrong = krew(&["install"], &amd64);
    wrong.failed();
    let installed = krew(&["install"], &arm64);
    installed.ok();
    assert!(
        installed.all().contains("Installed plugin: kfsched"),
        "{installed}"
    );
    let plugin = arm_root.join("bin/kubectl-kfsched");
    let (machine, ..) = elf(&plugin);
    assert_eq!(machine, "AArch64");
    let v = run(sb.cmd(qemu()).arg(&plugin).arg("version"), None);
    v.ok();
    assert_eq!(v.stdout, format!("kfsched {tag}\n"));
}

/// The triples of the krew-release-bot template's archives.
fn template_targets() -> Vec<String> {
    let template = std::fs::read_to_string(root().join("krew-manifest.yaml")).expect("template");
    let mut targets: Vec<String> = template
        .lines()
        .filter_map(|l| l.split("kubectl-kfsched_{{ .TagName }}_").nth(1))
        .filter_map(|rest| rest.split(['"']).next())
        .map(|file| {
            file.trim_end_matches(".tar.gz")
                .trim_end_matches(".zip")
                .to_string()
        })
        .collect();
    targets.sort();
    targets
}

#[test]
#[ignore = "needs actionlint: scripts/release.sh --setup"]
fn the_github_workflows_pass_actionlint_and_release_with_release_sh() {
    let actionlint = release_tool("actionlint");
    let workflows = root().join(".github/workflows");
    let lint = run(
        plain(&actionlint)
            .args(["-no-color", "-verbose"])
            .arg(workflows.join("ci.yml"))
            .arg(workflows.join("release.yml"))
            .arg(workflows.join("fuzz.yml"))
            .current_dir(root()),
        None,
    );
    lint.ok();
    assert!(lint.stdout.is_empty(), "{lint}");
    assert!(lint.stderr.contains("Found 0 errors"), "{lint}");

    let release = std::fs::read_to_string(workflows.join("release.yml")).expect("release.yml");
    // The build matrix is every platform of the template, built by the script.
    let mut matrix: Vec<String> = release
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- target: "))
        .map(|t| t.trim().to_string())
        .collect();
    matrix.sort();
    assert_eq!(matrix, template_targets(), "release.yml's matrix");
    for command in [
        "scripts/release.sh --setup --target \"$TARGET\"",
        "scripts/release.sh --target \"$TARGET\" \"${wheel[@]}\" --out dist",
        "scripts/release.sh --sdist --out dist",
        "maturin build --profile dist --locked --target x86_64-pc-windows-msvc --out dist",
        "python -m pip install dist/kfsched-*.tar.gz",
        "uses: pypa/gh-action-pypi-publish@",
        "scripts/release.sh --no-build --all --out dist",
        "uses: rajatjindal/krew-release-bot@",
        "krew_template_file: krew-manifest.yaml",
    ] {
        assert!(release.contains(command), "release.yml lacks {command:?}");
    }
    let ci = std::fs::read_to_string(workflows.join("ci.yml")).expect("ci.yml");
    for command in [
        "cargo fmt --all -- --check",
        "cargo clippy --workspace --all-targets --locked -- -D warnings",
        "os: [ubuntu-latest, macos-latest, windows-latest]",
        "scripts/test.sh",
        "actionlint",
    ] {
        assert!(ci.contains(command), "ci.yml lacks {command:?}");
    }
    // The scheduled fuzzing runs the script CI runs, for longer.
    let fuzz = std::fs::read_to_string(workflows.join("fuzz.yml")).expect("fuzz.yml");
    for line in [
        "schedule:",
        "- run: scripts/fuzz.sh",
        "KFSCHED_FUZZ_SECONDS:",
    ] {
        assert!(fuzz.contains(line), "fuzz.yml lacks {line:?}");
    }
}
