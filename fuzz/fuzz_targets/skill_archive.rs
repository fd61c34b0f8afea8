//! Skill archives (`.skill`, `.zip`): the bytes are written to a file in a fresh temporary
//! folder and loaded with a cache beside it, as a search that finds an archive loads it.
//! Any bytes give a skill or the problems, never a panic; nothing is unpacked outside the
//! cache, a skill loaded is in it, and loading the same archive again (now from the cache)
//! gives the same answer.
#![no_main]

use kite::skills::Skill;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

/// Every path under `dir`, links not followed.
fn tree(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        out.push(p.clone());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            tree(&p, out);
        }
    }
}

fuzz_target!(|bytes: &[u8]| {
    // Removed, with all that was unpacked, when it drops.
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let root = tmp.path();
    // A SKILL.md at the archive's top is a skill named after the archive: `seed`.
    let archive = root.join("seed.skill");
    let cache = root.join("cache");
    std::fs::write(&archive, bytes).expect("the archive written");

    let first = Skill::load(&archive, &cache);
    if let Ok(skill) = &first {
        assert!(skill.dir.starts_with(&cache), "{:?}", skill.dir);
        assert!(skill.file.starts_with(&skill.dir), "{:?}", skill.file);
        assert_eq!(skill.source, archive);
    }
    if let Err(invalid) = &first {
        assert!(!invalid.problems.is_empty(), "refused with no problem");
        assert_eq!(invalid.path, archive);
    }
    let mut found = Vec::new();
    tree(root, &mut found);
    for p in &found {
        assert!(
            *p == archive || p.starts_with(&cache),
            "{p:?} was written outside the cache"
        );
    }
    let again = Skill::load(&archive, &cache);
    assert_eq!(
        first, again,
        "loading it again from the cache changed the answer"
    );
});
