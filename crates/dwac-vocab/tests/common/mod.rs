//! Shared test helpers: the shared data (through `dwac-testdata`), building the round-trip corpus.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use dwac_vocab::Tokenizer;

/// The tokenizers every test covers, by directory name under `data/tokenizers`.
pub const TOKENIZERS: [&str; 5] = ["gpt2", "deepseek-r1", "qwen2", "qwen3", "phi-3.5-mini"];

/// The shared data folder (`dwac-testdata`'s policy: `DWAC_SHARED_DATA`, else `../shared/data`
/// beside the repository; missing, it fails the test).
pub fn data_dir() -> PathBuf {
    dwac_testdata::shared_data()
}

pub fn load(data: &Path, name: &str) -> Tokenizer {
    let path = data.join("tokenizers").join(name).join("tokenizer.json");
    assert!(path.is_file(), "{} is missing from the shared data", path.display());
    Tokenizer::from_file(&path).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
}

/// Concatenated bytes of `ids`.
pub fn spell(tok: &Tokenizer, ids: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    for &id in ids {
        out.extend_from_slice(tok.vocab().token_bytes(id).unwrap_or_else(|| panic!("id {id} out of range")));
    }
    out
}

/// Hand-written hard cases: non-ASCII scripts, controls, odd whitespace, special-token lookalikes.
pub fn tricky_texts() -> Vec<String> {
    let mut v: Vec<String> = [
        "",
        " ",
        "  ",
        "hello world",
        " hello world",
        "Hello, World!\n",
        "中文分词测试：大型语言模型。",
        "日本語のテキスト、カタカナ、ひらがな",
        "한국어 텍스트",
        "emoji 🦀🎉👍🏽 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵",
        "combining: e\u{301} a\u{308} n\u{303} Z\u{335}\u{30f}a\u{334}\u{352}l\u{337}g\u{336}o\u{338}",
        "precomposed: é ä ñ vs decomposed: e\u{301} a\u{308} n\u{303}",
        "Hangul jamo: \u{1100}\u{1161}\u{11a8}",
        "RTL: שלום עולם مرحبا بالعالم \u{200f}\u{202e}reversed\u{202c}",
        "controls: \u{0}\u{1}\u{2}\u{7}\u{8}\u{b}\u{c}\u{1b}[0m\u{7f}\u{80}\u{9f}",
        "nul\u{0}in\u{0}the\u{0}middle",
        "lone\rcarriage\rreturns\r",
        "\r\n windows \r\n\r\n",
        "\ttabs\t\tand\t \t mixed\t\n",
        "long whitespace:                                                                 end",
        "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
        "                                                                                                  ",
        "\u{a0}nbsp\u{a0}\u{2007}figure\u{202f}narrow\u{3000}ideographic\u{2028}ls\u{2029}ps\u{feff}bom",
        "zero\u{200b}width\u{200c}non\u{200d}joiner",
        "metaspace \u{2581} literal \u{2581}\u{2581}x\u{2581}",
        "<|endoftext|> <|im_end|> <|im_start|>user\n<think>x</think> </s> <s> <unk>",
        "<｜end▁of▁sentence｜><｜User｜>hi<｜Assistant｜>",
        "<0x0A> <0xFF> byte-token lookalikes",
        "Ġthe Ċ ĉ byte-level lookalikes",
        "math: ∀x∈ℝ, ∑ᵢ xᵢ² ≤ ∞; ½ ¾ ⅞",
        "surrogate-range neighbours: \u{d7ff}\u{e000}\u{fffd}\u{ffff}\u{10000}\u{10ffff}",
        "{\"key\": [1, 2.5e-10, true, null, \"\\u00e9\\n\"]}",
        "'s 't 're 've 'm 'll 'd 'S 'T IT'S",
        "1234567890 3.14159 -0.000001 1e308 ١٢٣ ๑๒๓",
        "a\u{2581}b",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Long runs mixing everything.
    v.push("x ".repeat(2000));
    v.push(" \n\t\r".repeat(300));
    v.push("🦀".repeat(500));
    v.push("e\u{301}".repeat(500));
    v
}

/// The corpus: every MaskBench instance (compact and pretty), every grammar file, tricky texts.
pub struct Corpus {
    /// Per MaskBench file: its instance texts (compact and pretty for each test).
    pub maskbench: Vec<(String, Vec<String>)>,
    pub grammars: Vec<(String, String)>,
    pub tricky: Vec<String>,
}

pub fn corpus(data: &Path) -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| build_corpus(data))
}

fn sorted_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sorted_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn build_corpus(data: &Path) -> Corpus {
    let mut files = Vec::new();
    sorted_files(&data.join("jsonschemabench/maskbench/data"), &mut files);
    let mut maskbench = Vec::new();
    for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "json")) {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(f).expect("read maskbench file")).expect("maskbench json");
        let mut texts = Vec::new();
        for t in v.get("tests").and_then(|t| t.as_array()).into_iter().flatten() {
            if let Some(d) = t.get("data") {
                texts.push(serde_json::to_string(d).expect("compact"));
                texts.push(serde_json::to_string_pretty(d).expect("pretty"));
            }
        }
        let name = f.file_name().expect("file name").to_string_lossy().into_owned();
        maskbench.push((name, texts));
    }
    let mut gfiles = Vec::new();
    sorted_files(&data.join("grammars"), &mut gfiles);
    let mut grammars = Vec::new();
    for f in gfiles {
        let bytes = std::fs::read(&f).expect("read grammar file");
        match String::from_utf8(bytes) {
            Ok(s) => grammars.push((f.display().to_string(), s)),
            Err(_) => eprintln!("note: {} is not UTF-8; not in the corpus", f.display()),
        }
    }
    Corpus { maskbench, grammars, tricky: tricky_texts() }
}

/// Round-trip statistics.
#[derive(Default, Debug)]
pub struct Stats {
    pub texts: usize,
    pub bytes: usize,
    pub tokens: usize,
}

/// Encode `text`, spell it back, and demand byte equality.
pub fn round_trip(tok: &Tokenizer, what: &str, text: &str, stats: &mut Stats) {
    let ids = tok.encode(text).unwrap_or_else(|e| panic!("{}: encode {what} ({:?}...): {e}", tok.name(), head(text)));
    for &id in &ids {
        assert!(!tok.vocab().is_special(id), "{}: {what}: special token {id} in an encoding", tok.name());
    }
    let got = spell(tok, &ids);
    assert!(got == text.as_bytes(), "{}: {what}: round trip differs for {:?}...", tok.name(), head(text));
    stats.texts += 1;
    stats.bytes += text.len();
    stats.tokens += ids.len();
}

fn head(s: &str) -> String {
    s.chars().take(60).collect()
}
