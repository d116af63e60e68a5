//! Reads the `evo:skill` version from the vendored WIT (`wit/since_v<version>/skill.wit`,
//! a byte-identical copy of the released contract) so that the version is written in
//! one place: the WIT's `package` line. `API_VERSION` is `env!("EVO_SKILL_API_VERSION")`.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=wit");
    let mut versions: Vec<String> = std::fs::read_dir("wit")
        .expect("wit/ holds the vendored contract")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|name| name.strip_prefix("since_v").map(str::to_owned))
        .collect();
    versions.sort_by_key(|v| {
        v.split('.')
            .map(|n| n.parse::<u32>().unwrap_or(0))
            .collect::<Vec<_>>()
    });
    let newest = versions.last().expect("a wit/since_v<version> directory");
    let wit = Path::new("wit")
        .join(format!("since_v{newest}"))
        .join("skill.wit");
    let text = std::fs::read_to_string(&wit).expect("skill.wit is readable");
    let declared = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("package evo:skill@"))
        .and_then(|rest| rest.strip_suffix(';'))
        .expect("skill.wit declares `package evo:skill@<version>;`");
    assert_eq!(
        declared,
        newest,
        "{} declares version {declared}; its directory must be named since_v{declared}",
        wit.display()
    );
    println!("cargo:rustc-env=EVO_SKILL_API_VERSION={declared}");
}
