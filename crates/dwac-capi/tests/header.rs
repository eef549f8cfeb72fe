//! `include/dwac.h` is what cbindgen makes of `src/lib.rs` now: a stale header fails here.
//! Regenerate with `DWAC_BLESS=1 cargo test -p dwac-capi --test all header`.

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_src(dir.join("src/lib.rs"))
        .with_config(config)
        .generate()
        .expect("cbindgen could not read src/lib.rs")
        .write(&mut generated);
    let header = dir.join("../../include/dwac.h");
    if std::env::var_os("DWAC_BLESS").is_some() {
        std::fs::write(&header, &generated).unwrap();
    }
    let committed = std::fs::read(&header).unwrap_or_default();
    assert!(
        committed == generated,
        "include/dwac.h is stale (or missing): regenerate it with `DWAC_BLESS=1 cargo test -p dwac-capi --test all header`"
    );
    // (The header declares every entry point.)
    let text = String::from_utf8(generated).unwrap();
    let src = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    for name in src.lines().filter_map(|l| l.split("extern \"C\" fn ").nth(1)).map(|r| r.split('(').next().unwrap()) {
        assert!(text.contains(&format!("{name}(")), "{name} missing from the header");
    }
}
