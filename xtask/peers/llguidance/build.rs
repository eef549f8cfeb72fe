//! Records the resolved llguidance version (from Cargo.lock) for the env line.
fn main() {
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let mut version = "unknown".to_string();
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l.trim() == "name = \"llguidance\"" {
            if let Some(v) = lines.next().and_then(|v| v.trim().strip_prefix("version = ")) {
                version = v.trim_matches('"').to_string();
            }
            break;
        }
    }
    println!("cargo:rustc-env=DWAC_PEER_LLGUIDANCE_VERSION={version}");
    println!("cargo:rerun-if-changed=Cargo.lock");
}
