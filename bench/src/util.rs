//! Small helpers shared by the bench subcommands.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// While alive, panics print nothing; their message and location are kept for [`catch`].
pub struct Silenced {
    _private: (),
}

impl Silenced {
    pub fn install() -> Silenced {
        std::panic::set_hook(Box::new(|info| {
            let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
                s.to_string()
            } else if let Some(s) = info.payload().downcast_ref::<String>() {
                s.clone()
            } else {
                "panic".to_string()
            };
            let loc = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg}{loc}")));
        }));
        Silenced { _private: () }
    }
}

impl Drop for Silenced {
    fn drop(&mut self) {
        let _ = std::panic::take_hook();
    }
}

/// Run `f`, turning a panic into `Err(message)` (with its location when a [`Silenced`] hook is
/// installed).
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    LAST_PANIC.with(|p| *p.borrow_mut() = None);
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        LAST_PANIC.with(|p| p.borrow_mut().take()).unwrap_or_else(|| {
            if let Some(s) = payload.downcast_ref::<&str>() {
                s.to_string()
            } else if let Some(s) = payload.downcast_ref::<String>() {
                s.clone()
            } else {
                "panic".to_string()
            }
        })
    })
}

/// A progress bar on stderr, hidden for machine output.
pub fn bar(len: u64, hidden: bool) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    if hidden {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    } else if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed_precise} eta {eta} {msg}")
    {
        bar.set_style(style);
    }
    bar
}

/// Round to `d` decimals for JSON output.
pub fn round(x: f64, d: i32) -> f64 {
    let m = 10f64.powi(d);
    (x * m).round() / m
}

/// Build one of the Rust peers (`bench/peers/<name>`, its own workspace and lock file) into
/// `target/peers/<name>`; returns the binary.
pub fn build_rust_peer(name: &str) -> anyhow::Result<std::path::PathBuf> {
    use anyhow::Context;
    let root = dwac_testdata::repo_root();
    let manifest = root.join("bench/peers").join(name).join("Cargo.toml");
    let target = root.join("target/peers").join(name);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("building the {name} peer (cargo build --release --manifest-path bench/peers/{name}/Cargo.toml)");
    let st = std::process::Command::new(cargo)
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .status()
        .with_context(|| format!("running cargo for the {name} peer"))?;
    anyhow::ensure!(st.success(), "building the {name} peer failed ({st})");
    Ok(target.join("release").join(format!("dwac-peer-{name}")))
}

/// A tokenizer given as a path, or by name (a folder of `../shared/data/tokenizers`).
pub fn tokenizer_file(name: &str) -> std::path::PathBuf {
    let p = std::path::PathBuf::from(name);
    if p.exists() {
        p
    } else {
        dwac_testdata::tokenizer_json(name)
    }
}

/// Load a tokenizer given as a path or by name (as [`tokenizer_file`]).
pub fn tokenizer(name: &str) -> anyhow::Result<dwac_vocab::Tokenizer> {
    use anyhow::Context;
    let path = tokenizer_file(name);
    dwac_vocab::Tokenizer::from_file(&path).with_context(|| format!("loading {}", path.display()))
}

/// The peers named in a comma-separated list (`none`: no peer).
pub fn peer_list(list: &str) -> Vec<String> {
    list.split(',').map(str::trim).filter(|p| !p.is_empty() && *p != "none").map(String::from).collect()
}
