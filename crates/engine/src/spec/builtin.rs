//! limitlab's nine shipped scripts as specs: the same `scripts/*.toml` files a user could pass as a
//! path, embedded in the binary with their scripts so the built-in names work from anywhere.
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::{Files, Spec};
use crate::shipped::Variant;

/// The embedded files, by their path under `scripts/`.
const FILES: [(&str, &str); 18] = [
    ("fixed_window.toml", include_str!("../../scripts/fixed_window.toml")),
    ("sliding_window.toml", include_str!("../../scripts/sliding_window.toml")),
    ("sliding_log.toml", include_str!("../../scripts/sliding_log.toml")),
    ("token_bucket.toml", include_str!("../../scripts/token_bucket.toml")),
    ("gcra.toml", include_str!("../../scripts/gcra.toml")),
    ("seed/fixed_window.toml", include_str!("../../scripts/seed/fixed_window.toml")),
    ("seed/sliding_window.toml", include_str!("../../scripts/seed/sliding_window.toml")),
    ("seed/sliding_log.toml", include_str!("../../scripts/seed/sliding_log.toml")),
    ("seed/token_bucket.toml", include_str!("../../scripts/seed/token_bucket.toml")),
    ("fixed_window.lua", crate::shipped::fixed_window::SCRIPT),
    ("sliding_window.lua", crate::shipped::sliding_window::SCRIPT),
    ("sliding_log.lua", crate::shipped::sliding_log::SCRIPT),
    ("token_bucket.lua", crate::shipped::token_bucket::SCRIPT),
    ("gcra.lua", crate::shipped::gcra::SCRIPT),
    ("seed/fixed_window.lua", crate::shipped::fixed_window::SEED_SCRIPT),
    ("seed/sliding_window.lua", crate::shipped::sliding_window::SEED_SCRIPT),
    ("seed/sliding_log.lua", crate::shipped::sliding_log::SEED_SCRIPT),
    ("seed/token_bucket.lua", crate::shipped::token_bucket::SEED_SCRIPT),
];

/// Reads the embedded copies; paths are relative to `scripts/`.
struct Embedded;

impl Files for Embedded {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        let rel = path.strip_prefix("scripts").unwrap_or(path);
        FILES
            .iter()
            .find(|(p, _)| Path::new(p) == rel)
            .map(|(_, body)| body.to_string())
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "not one of limitlab's embedded scripts"))
    }
}

/// The spec file of a shipped script, relative to the repository: `scripts/gcra.toml`.
pub fn path(v: Variant) -> PathBuf {
    let name = v.name();
    match name.strip_prefix("seed_") {
        Some(rest) => PathBuf::from(format!("scripts/seed/{rest}.toml")),
        None => PathBuf::from(format!("scripts/{name}.toml")),
    }
}

/// The spec of a shipped script (parsed once, shared).
pub fn spec(v: Variant) -> Arc<Spec> {
    static SPECS: OnceLock<Vec<Arc<Spec>>> = OnceLock::new();
    let all = SPECS.get_or_init(|| {
        Variant::ALL
            .iter()
            .map(|&v| {
                let p = path(v);
                let text = Embedded.read(&p).expect("every shipped spec is embedded");
                let dir = p.parent().unwrap_or(Path::new("")).to_path_buf();
                let spec = Spec::from_toml(&text, &p, &dir, &Embedded)
                    .unwrap_or_else(|e| panic!("shipped spec {}: {e}", p.display()));
                assert_eq!(spec.model, Some(v), "{} names its own model", p.display());
                Arc::new(spec)
            })
            .collect()
    });
    let i = Variant::ALL.iter().position(|&x| x == v).expect("Variant::ALL holds every variant");
    Arc::clone(&all[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_spec_parses_and_names_its_script_and_model() {
        for v in Variant::ALL {
            let s = spec(v);
            assert_eq!(s.name, v.name());
            assert_eq!(s.scripts.len(), 1);
            assert_eq!(s.scripts[0].script.body, v.script());
            assert_eq!(s.uses_cost(), v.takes_cost(), "{v}");
            assert_eq!(s.uses_burst(), v.takes_burst(), "{v}");
        }
    }

    #[test]
    fn the_files_on_disk_are_the_embedded_ones() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        for (p, body) in FILES {
            let on_disk = std::fs::read_to_string(root.join("scripts").join(p)).unwrap();
            assert_eq!(on_disk, body, "{p}");
        }
    }
}
