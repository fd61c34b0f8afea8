//! A `SKILL.md` as loading a skill reads it: the frontmatter split off, its YAML read as the
//! reference library reads it, and every rule checked. Any text gives a frontmatter or the
//! problems, never a panic; what is accepted keeps the rules, and the problems name lines
//! of the file.
#![no_main]

use kite::skills::{Frontmatter, MAX_DESCRIPTION, MAX_NAME};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match Frontmatter::check(text, None) {
        Ok((meta, _body)) => {
            assert!(!meta.name.is_empty() && meta.name.trim() == meta.name);
            assert!(meta.name.chars().count() <= MAX_NAME, "{:?}", meta.name);
            assert!(!meta.description.is_empty());
            assert!(meta.description.chars().count() <= MAX_DESCRIPTION);
            // In a folder of its own name (NFKC is stable), it is the same skill.
            let named = Frontmatter::check(text, Some(&meta.name));
            assert_eq!(named.map(|(m, _)| m), Ok(meta));
        }
        Err(problems) => {
            assert!(!problems.is_empty(), "refused with no problem");
            // Line ends are made `\n` first, as Python reads text. The YAML reader may place
            // an error at the end of the text on the line after the last.
            let lines = text
                .replace("\r\n", "\n")
                .replace('\r', "\n")
                .lines()
                .count();
            for p in &problems {
                assert!(!p.message.is_empty());
                if let Some(line) = p.line {
                    assert!(line >= 1 && line <= lines + 1, "{p} ({lines} lines)");
                }
            }
        }
    }
});
