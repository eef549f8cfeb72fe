//! Where the workspace's test data lives, one policy for every test suite and the bench, and
//! its corpora read as data ([`maskbench_instances`], [`test_suite_files`], [`large_schemas`]).
//!
//! The shared corpora (tokenizers, grammars, MaskBench, the JSON-Schema-Test-Suite) are in
//! [`ENV`] (`DWAC_SHARED_DATA`) if it is set, else in `../shared/data` beside the repository.
//! CI always has them, so a missing folder or file is a failure with a message naming the path
//! and the variable, never a test that notes "skipping" and passes.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod corpus;

pub use corpus::{
    json_dumps, large_schemas, maskbench_files, maskbench_instances, test_suite_files, test_suite_instances, Instance,
    LargeSchema, Rng,
};

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable that points at the shared data folder.
pub const ENV: &str = "DWAC_SHARED_DATA";

/// The repository root (the workspace's folder).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors().nth(2).unwrap_or(here).to_path_buf()
}

/// The shared data folder was not found where the policy looks for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingData {
    /// Where it was looked for.
    pub path: PathBuf,
    /// Whether that path came from [`ENV`] (else it is the default beside the repository).
    pub from_env: bool,
}

impl fmt::Display for MissingData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = if self.from_env {
            format!("{ENV} is set to it")
        } else {
            format!("the default, ../shared/data beside the repository; {ENV} is not set")
        };
        write!(
            f,
            "the shared test data is missing: no folder at {} ({why}). The tests need it (CI always has \
             it): put the data there or set {ENV} to its folder",
            self.path.display()
        )
    }
}

impl std::error::Error for MissingData {}

/// `../shared/data` beside the repository.
fn default_shared_data() -> PathBuf {
    let root = repo_root();
    match root.parent() {
        Some(up) => up.join("shared/data"),
        None => root.join("../shared/data"),
    }
}

/// The shared data folder as the policy finds it for a given value of [`ENV`] (`None`: not
/// set): that path, or `../shared/data` beside the repository; an error if it is not a folder.
pub fn shared_data_at(env_value: Option<&OsStr>) -> Result<PathBuf, MissingData> {
    let (path, from_env) = match env_value {
        Some(v) => (PathBuf::from(v), true),
        None => (default_shared_data(), false),
    };
    if path.is_dir() {
        Ok(path)
    } else {
        Err(MissingData { path, from_env })
    }
}

/// The shared data folder ([`ENV`], else `../shared/data` beside the repository).
///
/// # Panics
/// If the folder does not exist, with a message naming the path and [`ENV`].
pub fn shared_data() -> PathBuf {
    shared_data_at(std::env::var_os(ENV).as_deref()).unwrap_or_else(|e| panic!("{e}"))
}

/// `rel` below the shared data folder (a file or a folder).
///
/// # Panics
/// If the shared data folder, or `rel` in it, does not exist.
pub fn shared_path(rel: impl AsRef<Path>) -> PathBuf {
    let data = shared_data();
    let p = data.join(rel.as_ref());
    assert!(
        p.exists(),
        "the shared test data at {} has no {} ({ENV} {}): the tests need it",
        data.display(),
        rel.as_ref().display(),
        if std::env::var_os(ENV).is_some() { "is set" } else { "is not set" }
    );
    p
}

/// The `tokenizer.json` of a tokenizer of the shared data, by its folder name (`gpt2`,
/// `qwen3`, `phi-3.5-mini`, ...).
///
/// # Panics
/// As [`shared_path`].
pub fn tokenizer_json(name: &str) -> PathBuf {
    shared_path(format!("tokenizers/{name}/tokenizer.json"))
}

/// llama.cpp's vocabulary-only GGUF file `ggml-vocab-<name>.gguf` (`gpt-2`, `qwen2`, `phi-3`,
/// ...), next to which lie its tokenization vectors (`.gguf.inp`, `.gguf.out`).
///
/// # Panics
/// As [`shared_path`].
pub fn gguf_vocab(name: &str) -> PathBuf {
    shared_path(format!("tokenizers/llama.cpp-vocab/ggml-vocab-{name}.gguf"))
}

/// The shared grammar collection (`.lark` and `.gbnf` files).
///
/// # Panics
/// As [`shared_path`].
pub fn grammars_dir() -> PathBuf {
    shared_path("grammars")
}

/// One draft's folder of the JSON-Schema-Test-Suite (`draft2020-12`, `draft7`, ...).
///
/// # Panics
/// As [`shared_path`].
pub fn schema_test_suite(draft: &str) -> PathBuf {
    shared_path(format!("json-schema-test-suite/tests/{draft}"))
}

/// MaskBench's schema files (`<split>---<name>.json`).
///
/// # Panics
/// As [`shared_path`].
pub fn maskbench_dir() -> PathBuf {
    shared_path("jsonschemabench/maskbench/data")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A corpus that is not there is an error naming the path and the variable.
    #[test]
    fn a_missing_corpus_is_an_error_naming_path_and_variable() {
        let nowhere = repo_root().join("no-such-shared-data-folder");
        let e = shared_data_at(Some(nowhere.as_os_str())).unwrap_err();
        assert_eq!(e, MissingData { path: nowhere.clone(), from_env: true });
        let msg = e.to_string();
        assert!(msg.contains(&nowhere.display().to_string()) && msg.contains(ENV), "{msg}");
        // A file is not a folder either.
        let file = repo_root().join("Cargo.toml");
        assert!(shared_data_at(Some(file.as_os_str())).is_err());
    }

    /// [`shared_data`] itself, with the variable naming nothing, fails the test that calls it
    /// (this test binary run again, as a child, on this test alone with the variable set).
    #[test]
    fn shared_data_fails_a_test_when_the_corpus_is_missing() {
        const CHILD: &str = "DWAC_TESTDATA_CHILD";
        if std::env::var_os(CHILD).is_some() {
            // The child: this must panic.
            let p = shared_data();
            println!("shared_data() returned {} instead of panicking", p.display());
            return;
        }
        let nowhere = repo_root().join("no-such-shared-data-folder");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "tests::shared_data_fails_a_test_when_the_corpus_is_missing", "--nocapture"])
            .env(CHILD, "1")
            .env(ENV, &nowhere)
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "the child passed:\n{text}");
        assert!(text.contains("1 failed"), "{text}");
        assert!(
            text.contains("shared test data is missing") && text.contains(&nowhere.display().to_string()),
            "{text}"
        );
        assert!(!text.contains("instead of panicking"), "{text}");
    }

    /// Unset, the policy looks beside the repository, and says so when it is not there.
    #[test]
    fn the_default_is_beside_the_repository() {
        let want = repo_root().parent().unwrap().join("shared/data");
        match shared_data_at(None) {
            Ok(p) => assert_eq!(p, want),
            Err(e) => {
                assert_eq!(e, MissingData { path: want, from_env: false });
                assert!(e.to_string().contains("is not set"), "{e}");
            }
        }
        assert!(repo_root().join("Cargo.toml").is_file() && repo_root().join("crates/dwac-testdata").is_dir());
    }

    /// With the data present (CI has it), the helpers name real files; a file that is not in it
    /// is a loud failure too.
    #[test]
    fn helpers_name_files_of_the_data() {
        assert!(tokenizer_json("gpt2").is_file());
        assert!(gguf_vocab("gpt-2").is_file());
        assert!(grammars_dir().is_dir() && maskbench_dir().is_dir() && schema_test_suite("draft2020-12").is_dir());
        let caught = std::panic::catch_unwind(|| tokenizer_json("no-such-tokenizer"));
        let text = caught.expect_err("a missing file must panic").downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(text.contains("no-such-tokenizer") && text.contains(ENV), "{text}");
    }
}
