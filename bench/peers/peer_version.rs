//! The build script of each Rust peer (`build = "../peer_version.rs"`): records the version of
//! the peer's engine that its own Cargo.lock resolved (the engine is the crate the package
//! `dwac-peer-<engine>` is named after) as `DWAC_PEER_VERSION`, for the report's env line.
fn main() {
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    let engine = package.strip_prefix("dwac-peer-").unwrap_or(&package).to_string();
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let mut version = "unknown".to_string();
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l.trim() == format!("name = \"{engine}\"") {
            if let Some(v) = lines.next().and_then(|v| v.trim().strip_prefix("version = ")) {
                version = v.trim_matches('"').to_string();
            }
            break;
        }
    }
    println!("cargo:rustc-env=DWAC_PEER_VERSION={version}");
    println!("cargo:rerun-if-changed=Cargo.lock");
}
