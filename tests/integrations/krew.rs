//! krew (SPEC §5): `plugin.yaml` and the krew-release-bot template
//! `krew-manifest.yaml` pass krew's own `validate-krew-manifest` (built from
//! sigs.k8s.io/krew), and the archive `scripts/release.sh` builds installs
//! with `kubectl krew install --manifest --archive` into a temporary
//! KREW_ROOT, after which the real kubectl finds and runs `kubectl kfsched`.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};

use super::{COMPANION, KFSCHED, Out, Sandbox, built_tool, kubectl, run, toolchain};
use crate::support::root;

/// Serves the files of `dir` over HTTP on 127.0.0.1 (krew downloads only
/// over HTTP), for `validate-krew-manifest`'s install check.
pub(super) fn serve(dir: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let _ = answer(stream, &dir);
            });
        }
    });
    port
}

fn answer(mut stream: TcpStream, dir: &Path) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
    }
    let name = request
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .trim_start_matches('/');
    let file = (!name.contains("..") && !name.contains('/'))
        .then(|| dir.join(name))
        .filter(|p| p.is_file());
    match file.and_then(|p| std::fs::read(p).ok()) {
        Some(body) => {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            stream.write_all(&body)?;
        }
        None => write!(
            stream,
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?,
    }
    stream.flush()
}

/// `validate-krew-manifest` infers the plugin name from the file name, as
/// krew-index stores it: plugins/kfsched.yaml.
pub(super) fn validate(sb: &Sandbox, manifest: &Path, skip_install: bool) -> Out {
    let dir = sb.path().join(format!(
        "validate-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    ));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let copy = dir.join("kfsched.yaml");
    std::fs::copy(manifest, &copy).expect("copy manifest");
    let mut c = sb.cmd(built_tool("validate-krew-manifest"));
    c.arg("-manifest").arg(&copy);
    if skip_install {
        c.arg("-skip-install");
    }
    run(&mut c, None)
}

/// The binaries under test without their debug info (the archive is
/// copied around several times).
fn release_binaries(sb: &Sandbox) -> PathBuf {
    let dir = sb.path().join("release-bin");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (name, from) in [
        ("kubectl-kfsched", KFSCHED),
        ("kubectl_complete-kfsched", COMPANION),
    ] {
        let to = dir.join(name);
        std::fs::copy(from, &to).expect("copy binary");
        // Best effort: without `strip` the archive is only larger.
        let _ = run(sb.cmd("strip").arg("--strip-debug").arg(&to), None);
    }
    dir
}

#[test]
#[ignore = "needs the integration tools: scripts/test.sh sets them up"]
fn krew_validates_the_manifests_and_installs_the_release_archive() {
    let mut sb = Sandbox::new();
    sb.path.push(
        built_tool("kubectl-krew")
            .parent()
            .expect("tools dir")
            .to_path_buf(),
    );
    sb.path.push(toolchain());
    // The plugin must come from krew's install, not from the sandbox.
    sb.plugin_on_path = false;
    let version = env!("CARGO_PKG_VERSION");
    let tag = format!("v{version}");

    // The committed manifest: structurally valid, every supported platform,
    // and exactly the template rendered for this version.
    let committed = root().join("plugin.yaml");
    validate(&sb, &committed, true).ok();
    let text = std::fs::read_to_string(&committed).expect("plugin.yaml");
    for (os, arch, target) in [
        ("linux", "amd64", "x86_64-unknown-linux-musl.tar.gz"),
        ("linux", "arm64", "aarch64-unknown-linux-musl.tar.gz"),
        ("darwin", "amd64", "x86_64-apple-darwin.tar.gz"),
        ("darwin", "arm64", "aarch64-apple-darwin.tar.gz"),
        ("windows", "amd64", "x86_64-pc-windows-gnu.zip"),
    ] {
        let bin = if os == "windows" {
            "kubectl-kfsched.exe"
        } else {
            "kubectl-kfsched"
        };
        let entry = format!(
            "        os: {os}\n        arch: {arch}\n    uri: https://github.com/kfsched/kfsched/releases/download/{tag}/kubectl-kfsched_{tag}_{target}\n"
        );
        assert!(
            text.contains(&entry),
            "plugin.yaml lacks {os}/{arch}:\n{entry}"
        );
        let after = &text[text.find(&entry).map_or(0, |i| i + entry.len())..];
        assert!(
            after.lines().nth(1) == Some(&format!("    bin: {bin}")[..]),
            "{os}/{arch}: bin {bin}"
        );
    }
    assert!(
        text.contains(&format!("  version: {tag}\n")),
        "version {tag}"
    );
    assert!(text.contains("  caveats: |\n") && text.contains("kubectl_complete-kfsched"));
    let rendered = sb.path().join("template");
    std::fs::create_dir_all(&rendered).expect("mkdir");
    let release = root().join("scripts/release.sh");
    run(
        sb.cmd(&release)
            .args(["--no-build", "--placeholder", "--out"])
            .arg(&rendered),
        None,
    )
    .ok();
    let from_template = std::fs::read_to_string(rendered.join("plugin.yaml")).expect("render");
    assert!(
        from_template == text,
        "plugin.yaml is not krew-manifest.yaml rendered for {tag} \
         (scripts/release.sh --no-build --placeholder):\n{}",
        crate::support::show_diff(&from_template, &text)
    );

    // The release archive, served over HTTP for the full validation, which
    // installs it the way krew-index CI does (and checks the LICENSE).
    let dist = sb.path().join("dist");
    std::fs::create_dir_all(&dist).expect("mkdir");
    let port = serve(dist.clone());
    let bins = release_binaries(&sb);
    let built = run(
        sb.cmd(&release)
            .arg("--bin-dir")
            .arg(&bins)
            .arg("--out")
            .arg(&dist)
            .arg("--base-url")
            .arg(format!("http://127.0.0.1:{port}")),
        None,
    );
    built.ok();
    let host = run(sb.cmd("rustc").arg("-vV"), None);
    let triple = host
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap_or("x86_64-unknown-linux-gnu")
        .to_string();
    let archive = dist.join(format!("kubectl-kfsched_{tag}_{triple}.tar.gz"));
    assert!(archive.is_file(), "no {}\n{built}", archive.display());
    let listing = run(sb.cmd("tar").arg("-tzf").arg(&archive), None);
    listing.ok();
    let mut files: Vec<&str> = listing.stdout.lines().collect();
    files.sort();
    assert_eq!(
        files,
        [
            "LICENSE",
            "README.md",
            "kubectl-kfsched",
            "kubectl_complete-kfsched"
        ]
    );
    let local = dist.join("plugin.yaml");
    let full = validate(&sb, &local, false);
    full.ok();
    assert!(
        full.all().contains("all 1 spec.platforms installed fine"),
        "{full}"
    );

    // kubectl krew install --manifest --archive, then the real kubectl.
    let install = run(
        sb.cmd(kubectl())
            .args(["krew", "install", "--manifest"])
            .arg(&local)
            .arg("--archive")
            .arg(&archive),
        None,
    );
    install.ok();
    assert!(
        install.all().contains("Installed plugin: kfsched")
            && install.all().contains("kubectl_complete-kfsched"),
        "installed, with the completion caveat\n{install}"
    );
    let krew_bin = sb.path().join("krew/bin");
    sb.path.insert(0, krew_bin.clone());
    let v = run(sb.cmd(kubectl()).args(["kfsched", "version"]), None);
    v.ok();
    assert_eq!(v.stdout, format!("kfsched {tag}\n"));
    let list = run(sb.cmd(kubectl()).args(["plugin", "list"]), None);
    list.ok();
    assert!(
        list.stdout
            .contains(&krew_bin.join("kubectl-kfsched").display().to_string()),
        "{list}"
    );
    assert!(!list.all().to_lowercase().contains("warning"), "{list}");

    // The caveat's one-liner enables `kubectl kfsched <TAB>`.
    let caveat = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("ln -sf "))
        .expect("an ln -sf line in the caveats");
    run(sb.cmd("sh").arg("-c").arg(caveat), None).ok();
    let comp = run(
        sb.cmd(kubectl())
            .args(["__complete", "kfsched", "node", "dr"]),
        None,
    );
    comp.ok();
    assert_eq!(
        comp.stdout.lines().collect::<Vec<_>>(),
        [
            "drain\tCordon, then evict every pod (lists every pod's fate first; refuses, naming the flag, if one is blocked)",
            ":4"
        ],
        "{comp}"
    );
}
