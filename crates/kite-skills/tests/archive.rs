//! Skills packed as `.skill` / `.zip` archives: a good one loads and its script runs; hostile
//! ones are refused whole, and nothing lands outside the cache.

use kite_agent::{CancellationToken, ToolContext, Toolkit};
use kite_skills::{Root, RunOptions, Skill, SkillRun, SkillSet, discover};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use zip::write::SimpleFileOptions;

fn valid(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/skills/valid")
        .join(name)
}

/// An archive of `(name, bytes, unix mode)` members.
fn zip_of(path: &Path, members: &[(&str, Vec<u8>, u32)]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes, mode) in members {
        let options = SimpleFileOptions::default().unix_permissions(*mode);
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

/// The word-count skill's files as members under `prefix`.
fn word_count(prefix: &str) -> Vec<(String, Vec<u8>, u32)> {
    ["SKILL.md", "scripts/count.sh", "assets/poem.txt"]
        .into_iter()
        .map(|f| {
            let mode = if f.ends_with(".sh") { 0o755 } else { 0o644 };
            (
                format!("{prefix}{f}"),
                std::fs::read(valid("word-count").join(f)).unwrap(),
                mode,
            )
        })
        .collect()
}

fn members(list: &[(String, Vec<u8>, u32)]) -> Vec<(&str, Vec<u8>, u32)> {
    list.iter()
        .map(|(n, b, m)| (n.as_str(), b.clone(), *m))
        .collect()
}

#[tokio::test]
async fn an_archive_loads_and_its_script_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let archive = tmp.path().join("skills/word-count.skill");
    std::fs::create_dir_all(archive.parent().unwrap()).unwrap();
    zip_of(&archive, &members(&word_count("word-count/")));

    // Found by the search like a folder.
    let found = discover(&[Root::explicit(tmp.path().join("skills"))], &cache);
    assert_eq!(found.skills.len(), 1, "{:?}", found.invalid);
    let skill = &found.skills[0];
    assert_eq!(skill.name(), "word-count");
    assert_eq!(skill.source, archive);
    assert!(skill.dir.starts_with(&cache));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(skill.dir.join("scripts/count.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);

    let mut set = SkillSet::new();
    set.add(skill.clone()).unwrap();
    let run = SkillRun::new(Arc::new(set), RunOptions::default()).unwrap();
    let bash = run
        .tools()
        .into_iter()
        .find(|t| t.spec().name == "bash")
        .unwrap();
    let ctx = ToolContext {
        context: Arc::new(()),
        call_id: "c".into(),
        cancel: CancellationToken::new(),
    };
    let args =
        json!({"command": "skills/word-count/scripts/count.sh skills/word-count/assets/poem.txt"});
    let out = bash.call(args, ctx).await.unwrap();
    assert!(
        format!("{:?}", out.content).contains("words=29"),
        "{:?}",
        out.content
    );

    // SKILL.md at the top: the folder is named after the archive.
    let top = tmp.path().join("word-count.zip");
    zip_of(&top, &members(&word_count("")));
    assert_eq!(Skill::load(&top, &cache).unwrap().name(), "word-count");

    // What macOS's Finder adds beside the folder it zips is left out.
    let finder = tmp.path().join("finder.zip");
    let mut list = word_count("word-count/");
    list.push((
        "__MACOSX/word-count/._SKILL.md".into(),
        vec![0, 5, 22, 7],
        0o644,
    ));
    zip_of(&finder, &members(&list));
    let skill = Skill::load(&finder, &cache).unwrap();
    assert_eq!(skill.name(), "word-count");
    assert!(!skill.dir.parent().unwrap().join("__MACOSX").exists());
}

/// Members of an archive: name, bytes, unix mode.
type Members<'a> = Vec<(&'a str, Vec<u8>, u32)>;

#[test]
fn hostile_archives_are_refused_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let good = word_count("evil/");
    let big = vec![0u8; 17 * 1024 * 1024];
    let cases: Vec<(&str, Members, &str)> = vec![
        (
            "dotdot",
            [
                members(&good),
                vec![("evil/../../escaped.txt", b"x".to_vec(), 0o644)],
            ]
            .concat(),
            "outside the skill's folder",
        ),
        (
            "absolute",
            [
                members(&good),
                vec![("/tmp/escaped-abs.txt", b"x".to_vec(), 0o644)],
            ]
            .concat(),
            "outside the skill's folder",
        ),
        (
            "big",
            [members(&good), vec![("evil/assets/big.bin", big, 0o644)]].concat(),
            "larger than 16 MiB",
        ),
        (
            "empty",
            vec![("README.md", b"x".to_vec(), 0o644)],
            "holds no skill",
        ),
    ];
    for (name, list, says) in cases {
        let path = tmp.path().join(format!("{name}.skill"));
        zip_of(&path, &list);
        let err = Skill::load(&path, &cache).unwrap_err().to_string();
        assert!(err.contains(says), "{name}: {err}");
    }

    // A link member.
    let path = tmp.path().join("link.skill");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    for (n, b, _) in &good {
        zip.start_file(n.as_str(), SimpleFileOptions::default())
            .unwrap();
        zip.write_all(b).unwrap();
    }
    zip.add_symlink(
        "evil/assets/passwd",
        "/etc/passwd",
        SimpleFileOptions::default(),
    )
    .unwrap();
    zip.finish().unwrap();
    let err = Skill::load(&path, &cache).unwrap_err().to_string();
    assert!(err.contains("is a link"), "{err}");

    // Not an archive at all.
    let junk = tmp.path().join("junk.zip");
    std::fs::write(&junk, b"not a zip").unwrap();
    let err = Skill::load(&junk, &cache).unwrap_err().to_string();
    assert!(err.contains("not a zip archive"), "{err}");

    // Nothing escaped, and nothing half-unpacked stays in the cache.
    assert!(!tmp.path().join("escaped.txt").exists());
    assert!(!Path::new("/tmp/escaped-abs.txt").exists());
    let left: Vec<_> = std::fs::read_dir(&cache)
        .map(|d| d.count())
        .into_iter()
        .collect();
    assert_eq!(left, [0], "the cache holds leftovers");
}
