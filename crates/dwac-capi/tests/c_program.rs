//! A C program (`tests/c/smoke.c`) compiled with `cc` against `include/dwac.h` and the static
//! library, run over a real artifact (`artifacts/json.dwa.zst`, GPT-2): its masks (every word of
//! every step), mask counters and outcomes must be the Rust matcher's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use dwac_runtime::{Artifact, Matcher};

/// The static library, built by cargo into this test's target directory and profile (`cargo
/// test` builds only the rlib the test links; a C program needs `libdwac.a`).
fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let target_dir = profile_dir.parent().unwrap();
    let release = profile_dir.file_name().is_some_and(|n| n == "release");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "dwac-capi", "--lib"])
        .args(release.then_some("--release"))
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cannot run cargo");
    assert!(status.success(), "cargo could not build libdwac.a");
    let lib = profile_dir.join("libdwac.a");
    assert!(lib.exists(), "{} not built", lib.display());
    lib
}

#[test]
fn c_program_fills_masks_and_commits_like_rust() {
    let root = dwac_testdata::repo_root();
    let artifact = root.join("artifacts/json.dwa.zst");
    let tok = dwac_vocab::Tokenizer::default_embedded().unwrap();
    let run = tok
        .encode("{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2.5, null]}}")
        .unwrap();
    // What the Rust matcher says at every step.
    let engine = Arc::clone(Artifact::open(&artifact).unwrap().engine());
    let mut m = Matcher::new(engine);
    // A token refused after the run's first one (a raw newline inside a string, or a closer).
    let mut first = m.clone();
    first.commit(run[0]).unwrap();
    let bad = ["\n", "]", "}"]
        .iter()
        .map(|s| tok.encode(s).unwrap()[0])
        .find(|&t| !first.is_allowed(t))
        .expect("a refused token");
    let mut want = Vec::new();
    let mut words = vec![0u32; m.mask_words()];
    let (mut undecided, mut fallbacks) = (0u64, 0u64);
    for (i, &t) in run.iter().chain([&u32::MAX]).enumerate() {
        let c = m.fill_mask(&mut words).unwrap();
        let allowed: u32 = words.iter().map(|w| w.count_ones()).sum();
        assert_eq!(allowed as usize, m.allowed().len());
        let hex: Vec<String> = words.iter().map(|w| format!("{w:08x}")).collect();
        want.push(format!("mask {i} {allowed} {}", hex.join(" ")));
        (undecided, fallbacks) = (undecided + u64::from(c.undecided), fallbacks + u64::from(c.fallbacks));
        want.push(format!(
            "counters {i} {} {} {} {} {undecided} {fallbacks}",
            c.undecided,
            c.fallbacks,
            c.reads,
            i + 1
        ));
        if t != u32::MAX {
            m.commit(t).unwrap();
        }
    }
    want.push(format!("accepting {} terminated 0", m.is_accepting() as u8));

    let out_dir = tempfile::tempdir().unwrap();
    let exe = out_dir.path().join("smoke");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg("-I")
        .arg(root.join("include"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/smoke.c"))
        .arg(static_lib())
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(status.success(), "the C program did not compile");
    let tokens: Vec<String> = run.iter().map(|t| t.to_string()).collect();
    let out = Command::new(&exe).arg(&artifact).arg(tokens.join(",")).arg(bad.to_string()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the C program failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let got: Vec<&str> =
        stdout.lines().filter(|l| ["mask ", "counters ", "accepting "].iter().any(|p| l.starts_with(p))).collect();
    assert_eq!(got.len(), want.len(), "the C program printed {} step lines, Rust {}", got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        if *g != w {
            // Name the step, the first differing word and its tokens (a line has ~1,600 words).
            let (gw, ww): (Vec<&str>, Vec<&str>) = (g.split(' ').collect(), w.split(' ').collect());
            let k = (0..gw.len().max(ww.len())).find(|&k| gw.get(k) != ww.get(k)).unwrap_or(0);
            let word = |v: &[&str]| v.get(k).and_then(|x| u32::from_str_radix(x, 16).ok()).unwrap_or(0);
            let tokens: Vec<u32> = (0..32).filter(|b| (word(&gw) ^ word(&ww)) >> b & 1 == 1).collect();
            let base = k.saturating_sub(3) as u32 * 32;
            panic!(
                "the C program differs from the Rust matcher at `{} {}`, field {k}: C {:?}, Rust {:?} (mask lines: tokens {:?})",
                ww[0],
                ww.get(1).unwrap_or(&""),
                gw.get(k),
                ww.get(k),
                tokens.iter().map(|b| base + b).collect::<Vec<_>>()
            );
        }
    }
    assert!(want.iter().filter(|l| l.starts_with("mask ")).count() > 20);
    assert!(stdout.contains(&format!("version {}", env!("CARGO_PKG_VERSION"))));
    assert!(stdout.lines().any(|l| l.starts_with("rejected token ")), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("missing /nonexistent/x.dwa: ")), "{stdout}");
    assert!(stdout.trim_end().ends_with("ok"));
}
