//! Records which state of ../../pyo3-dlpack this module was compiled from
//! (`bench_ours.SOURCE`), since the results depend on it, not on the tree at run time.

use std::process::Command;

fn git(args: &[&str]) -> String {
    Command::new("git")
        .args(["-C", "../.."])
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn main() {
    println!("cargo:rerun-if-changed=../../pyo3-dlpack");
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/index");
    let rev = git(&["rev-parse", "--short", "HEAD"]);
    let dirty = !git(&["status", "--porcelain", "--", "pyo3-dlpack"]).is_empty();
    let source = match (rev.is_empty(), dirty) {
        (true, _) => "unknown revision".to_string(),
        (false, false) => format!("commit {rev}"),
        (false, true) => format!("commit {rev} + uncommitted changes in pyo3-dlpack/"),
    };
    println!("cargo:rustc-env=BENCH_OURS_SOURCE={source}");
}
