//! Agent Skills through the real binary: `kite skills validate|list|show`, and `kite ask`
//! disclosing skills to a model on loopback, running a skill's script in the sandbox, with
//! an MCP server's tools in the same run.

mod common;

use common::{KEY, answer, kite, run};
use kite::{FinishReason, Message, Part, Response, Role, ToolCall, Usage};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply, mcp};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/skills")
}

/// Copies the folder `from` to `to`.
fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[tokio::test]
async fn validate_exits_1_on_any_invalid_skill_and_names_file_line_and_rule() {
    let valid = fixtures().join("valid");
    let broken = fixtures().join("broken");
    let r = run(kite().arg("skills").arg("validate").args([
        valid.join("csv-stats"),
        valid.join("word-count"),
        valid.join(".hidden-collection/nested-skill"),
    ]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    for name in ["csv-stats", "word-count", "nested-skill"] {
        assert!(
            r.stdout.contains(&format!("valid skill {name}")),
            "{}",
            r.stdout
        );
    }

    // One broken skill among valid ones fails the whole command; the valid ones are still
    // said valid, and every problem of the broken one is named with its line and rule.
    let r = run(kite()
        .arg("skills")
        .arg("validate")
        .args([valid.join("csv-stats"), broken.join("Three-Problems")]))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains("valid skill csv-stats"), "{}", r.stdout);
    let problems: Vec<&str> = r.stderr.lines().filter(|l| l.contains("  - ")).collect();
    assert!(problems.len() >= 3, "{}", r.stderr);
    for p in &problems {
        assert!(
            p.contains("SKILL.md:") && p.ends_with(']'),
            "no file, line and rule in {p:?}"
        );
    }

    // Each broken skill on its own fails.
    for e in std::fs::read_dir(&broken).unwrap() {
        let path = e.unwrap().path();
        if !path.is_dir() {
            continue;
        }
        let r = run(kite().args(["skills", "validate"]).arg(&path)).await;
        assert_eq!(r.code, 1, "{} passed: {}", path.display(), r.stdout);
        assert!(r.stderr.contains("is not a valid skill"), "{}", r.stderr);
    }

    // A path that is not there is an error too, and so is no path at all.
    let r = run(kite().args(["skills", "validate", "/nonexistent/skill"])).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    let r = run(kite().args(["skills", "validate"])).await;
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[tokio::test]
async fn validate_checks_archives_and_refuses_escaping_ones() {
    let dir = tempfile::tempdir().unwrap();
    let zip = |name: &str, members: &[(&str, &str)]| {
        let path = dir.path().join(name);
        let script = "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1], 'w')\nfor i in range(2, len(sys.argv), 2): z.writestr(sys.argv[i], sys.argv[i + 1])\nz.close()";
        let mut c = std::process::Command::new("python3");
        c.args(["-c", script]).arg(&path);
        for (member, text) in members {
            c.args([member, text]);
        }
        assert!(c.status().unwrap().success());
        path
    };
    let skill_md = "---\nname: zipped\ndescription: A skill in an archive.\n---\nHello.\n";
    let good = zip("zipped.skill", &[("zipped/SKILL.md", skill_md)]);
    let evil = zip(
        "evil.zip",
        &[("zipped/SKILL.md", skill_md), ("../outside.txt", "gotcha")],
    );
    let cache = dir.path().join("cache");
    let validate = |path: &Path| {
        let mut c = kite();
        c.env("XDG_CACHE_HOME", &cache)
            .args(["skills", "validate"])
            .arg(path);
        c
    };
    let r = run(&mut validate(&good)).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("valid skill zipped"), "{}", r.stdout);
    let r = run(&mut validate(&evil)).await;
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("outside.txt"), "{}", r.stderr);
    assert!(!dir.path().join("outside.txt").exists());
    assert!(!cache.join("outside.txt").exists());
}

#[tokio::test]
async fn list_finds_skills_nearest_first_and_says_what_it_skipped() {
    let valid = fixtures().join("valid");
    let home = tempfile::tempdir().unwrap();
    // The project: a kite.toml naming a folder, and `.agents/skills` above the working
    // directory.
    let project = home.path().join("project");
    let cwd = project.join("sub/dir");
    std::fs::create_dir_all(&cwd).unwrap();
    copy(
        &valid.join("csv-stats"),
        &project.join(".agents/skills/csv-stats"),
    );
    copy(
        &fixtures().join("broken/name-mismatch"),
        &project.join(".agents/skills/name-mismatch"),
    );
    copy(
        &valid.join("word-count"),
        &cwd.join("vendor/skills/word-count"),
    );
    std::fs::write(
        cwd.join("kite.toml"),
        "[skills]\npaths = [\"vendor/skills\"]\n",
    )
    .unwrap();
    // The user's own skills, in the XDG config folder: one named like the project's.
    let config = home.path().join("config");
    copy(
        &valid.join("release-notes"),
        &config.join("kite/skills/release-notes"),
    );
    copy(
        &valid.join("csv-stats"),
        &config.join("kite/skills/csv-stats"),
    );
    // And one more folder on the command line.
    let extra = home.path().join("extra");
    copy(
        &valid.join(".hidden-collection"),
        &extra.join(".hidden-collection"),
    );

    let data = common::trust(&cwd);
    let list = |json: bool| {
        let mut c = kite();
        c.current_dir(&cwd)
            .env("XDG_DATA_HOME", &data)
            .env("XDG_CONFIG_HOME", &config)
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .args(["skills", "list", "--skills"])
            .arg(&extra);
        if json {
            c.arg("--json");
        }
        c
    };
    let r = run(&mut list(true)).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let skills: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = skills.iter().map(|s| s["name"].as_str().unwrap()).collect();
    // The project folder is not trusted: its skills come last, not offered, and hide
    // nothing, as `kite ask` sees them.
    assert_eq!(
        names,
        [
            "nested-skill",
            "word-count",
            "csv-stats",
            "release-notes",
            "csv-stats"
        ]
    );
    let offered: Vec<bool> = skills.iter().map(|s| s["offered"] == true).collect();
    assert_eq!(offered, [true, true, true, true, false]);
    let path = |s: &Value| s["path"].as_str().unwrap().to_owned();
    assert!(
        path(&skills[2]).ends_with("config/kite/skills/csv-stats"),
        "{}",
        skills[2]
    );
    assert!(
        path(&skills[4]).ends_with("project/.agents/skills/csv-stats"),
        "{}",
        skills[4]
    );
    assert!(
        skills[2]["description"].as_str().unwrap().contains("CSV"),
        "{}",
        skills[2]
    );
    assert!(!r.stderr.contains("is hidden by"), "{}", r.stderr);
    // What is wrong with a waiting skill is said before it is trusted.
    assert!(r.stderr.contains("name-mismatch"), "{}", r.stderr);
    // Trusted, the nearer csv-stats, the project's, is offered, and hides the user's.
    let trusted = std::process::Command::new(env!("CARGO_BIN_EXE_kite"))
        .arg("trust")
        .arg(&project)
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    assert!(trusted.status.success(), "{trusted:?}");
    let r = run(&mut list(true)).await;
    let names: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["path"].clone())
        .collect();
    assert_eq!(names.len(), 4, "{}", r.stdout);
    assert!(
        names[2]
            .as_str()
            .unwrap()
            .ends_with("project/.agents/skills/csv-stats"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("the skill csv-stats at") && r.stderr.contains("is hidden by the one at"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("skipped the skill at") && r.stderr.contains("name-mismatch"),
        "{}",
        r.stderr
    );

    let r = run(&mut list(false)).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("nested-skill  "), "{}", r.stdout);

    // `show` gives the instructions and the files.
    let r = run(kite()
        .current_dir(&cwd)
        .env("XDG_DATA_HOME", &data)
        .env("XDG_CONFIG_HOME", &config)
        .args(["skills", "show", "word-count"]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("name: word-count\n"), "{}", r.stdout);
    assert!(r.stdout.contains("scripts/count.sh"), "{}", r.stdout);
    assert!(r.stdout.contains("It prints `words=N`"), "{}", r.stdout);
    let r = run(kite()
        .current_dir(&cwd)
        .env("XDG_DATA_HOME", &data)
        .env("XDG_CONFIG_HOME", &config)
        .args(["skills", "show", "no-such-skill"]))
    .await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("no skill \"no-such-skill\""),
        "{}",
        r.stderr
    );
}

fn calls(calls: &[(&str, &str, &str)]) -> Reply {
    let response = Response {
        id: None,
        model: Some("m".into()),
        message: Message::new(
            Role::Assistant,
            calls
                .iter()
                .map(|(id, name, args)| Part::ToolCall(ToolCall::new(*id, *name, *args)))
                .collect(),
        ),
        finish_reason: FinishReason::ToolCalls,
        usage: Usage::default(),
    };
    Reply::sse(sse(Shape::Chat, &response, 1))
}

/// `kite ask` in `dir` against `server`, with `extra` flags.
fn ask(dir: &Path, server: &ReplayServer, extra: &[&str]) -> tokio::process::Command {
    let mut c = common::in_trusted(dir);
    c.env("OPENAI_API_KEY", KEY)
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .arg("ask")
        .args(extra)
        .args([
            "--provider",
            "openai",
            "--model",
            "gpt-5-nano",
            "--base-url",
        ])
        .arg(format!("{}/v1", server.url()))
        .arg("How many words are in the poem? And what is 19 + 23?");
    c
}

/// What the model was sent: each request's body.
fn bodies(server: &ReplayServer) -> Vec<Value> {
    server
        .requests()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

/// The tool results in a Chat Completions request, by call id.
fn result(body: &Value, id: &str) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .map(|m| m["content"].to_string())
        .unwrap_or_else(|| panic!("no result for {id} in {body}"))
}

#[tokio::test]
async fn ask_discloses_skills_step_by_step_and_runs_their_scripts_beside_mcp_tools() {
    let dir = tempfile::tempdir().unwrap();
    copy(
        &fixtures().join("valid/word-count"),
        &dir.path().join(".agents/skills/word-count"),
    );
    copy(
        &fixtures().join("valid/release-notes"),
        &dir.path().join(".agents/skills/release-notes"),
    );
    std::fs::write(
        dir.path().join("kite.toml"),
        format!(
            "[mcp.servers.py]\ncommand = {:?}\nargs = [{:?}]\n",
            mcp::python().to_string_lossy(),
            mcp::own("py_server.py").to_string_lossy()
        ),
    )
    .unwrap();
    common::trust_folder(dir.path());
    let server = ReplayServer::start(vec![
        calls(&[
            (
                "c1",
                "view",
                r#"{"path": "skills/word-count/SKILL.md"}"#,
            ),
            ("c2", "add", r#"{"a": 19, "b": 23}"#),
        ]),
        calls(&[(
            "c3",
            "bash",
            r#"{"command": "sh skills/word-count/scripts/count.sh skills/word-count/assets/poem.txt"}"#,
        )]),
        answer("The poem has 29 words, and 19 + 23 = 42.", 3),
    ])
    .await;
    let r = run(&mut ask(dir.path(), &server, &["-v"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("29 words"), "{}", r.stdout);
    // What was offered is said with -v (and only then).
    assert!(
        r.stderr
            .contains("skills offered: release-notes, word-count (--no-skills leaves them out)"),
        "{}",
        r.stderr
    );

    let sent = bodies(&server);
    assert_eq!(sent.len(), 3);
    // First: names and descriptions only, and every tool: the skills' and the server's.
    let system = sent[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("<available_skills>"), "{system}");
    assert!(system.contains("<name>\nword-count\n</name>"), "{system}");
    assert!(system.contains("Counts the words"), "{system}");
    assert!(!sent[0].to_string().contains("It prints `words=N`"));
    let offered: Vec<&str> = sent[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for name in ["view", "create_file", "str_replace", "bash", "add"] {
        assert!(offered.contains(&name), "{name} not in {offered:?}");
    }
    // Then the instructions, beside the server's answer.
    assert!(result(&sent[1], "c1").contains("It prints `words=N`"));
    assert!(result(&sent[1], "c2").contains("42"));
    // Then the script's output, from the sandbox.
    assert!(
        result(&sent[2], "c3").contains("words=29"),
        "{}",
        result(&sent[2], "c3")
    );
    // The other skill's instructions were never sent.
    assert!(!sent[2].to_string().contains("STYLE-MARKER-7"));

    // --no-skills leaves them out.
    let server = ReplayServer::start(vec![answer("Fine.", 1)]).await;
    let r = run(&mut ask(dir.path(), &server, &["--no-skills", "--no-mcp"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let sent = bodies(&server);
    assert!(sent[0].get("tools").is_none(), "{}", sent[0]);
    assert!(!sent[0].to_string().contains("available_skills"));

    // --skills adds a folder: its skill comes first.
    let server = ReplayServer::start(vec![answer("Fine.", 1)]).await;
    let extra = fixtures().join("valid/csv-stats");
    let r = run(&mut ask(
        dir.path(),
        &server,
        &["--no-mcp", "--skills", extra.to_str().unwrap()],
    ))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let body = &bodies(&server)[0];
    let system = body["messages"][0]["content"].as_str().unwrap();
    let at = |name: &str| system.find(&format!("<name>\n{name}\n")).unwrap();
    assert!(at("csv-stats") < at("word-count"), "{system}");
}

#[tokio::test]
async fn a_bad_skills_table_or_folder_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kite.toml");
    std::fs::write(&config, "[skills]\npath = [\"x\"]\n").unwrap();
    let r = run(kite().arg("--config").arg(&config).args(["skills", "list"])).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("unknown field `path`"), "{}", r.stderr);

    // A folder named on the command line must be there; one in kite.toml is only said.
    let r = run(kite().args(["skills", "list", "--skills", "/nonexistent/skills"])).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("--skills /nonexistent/skills: No such file"),
        "{}",
        r.stderr
    );
    std::fs::write(
        dir.path().join("kite.toml"),
        "[skills]\npaths = [\"/nonexistent/skills\"]\n",
    )
    .unwrap();
    let data = common::trust(dir.path());
    let r = run(kite()
        .current_dir(dir.path())
        .env("XDG_DATA_HOME", &data)
        .args(["skills", "list"]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("cannot look for skills in /nonexistent/skills"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn a_projects_skills_wait_for_the_folder_to_be_trusted() {
    let dir = tempfile::tempdir().unwrap();
    copy(
        &fixtures().join("valid/word-count"),
        &dir.path().join(".agents/skills/word-count"),
    );
    std::fs::write(dir.path().join("kite.toml"), "").unwrap();
    let server = ReplayServer::start(vec![answer("No skills.", 1), answer("Skills.", 2)]).await;
    let r = run(&mut ask(dir.path(), &server, &[])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let shown = dir.path().canonicalize().unwrap().display().to_string();
    assert!(
        r.stderr.contains(&format!("run `kite trust {shown}`")),
        "{}",
        r.stderr
    );
    let first = &bodies(&server)[0];
    assert!(!first.to_string().contains("word-count"), "{first}");
    // Listed, they are said not to be offered yet.
    let listed = |r: common::Run| -> serde_json::Value {
        assert_eq!(r.code, 0, "{}", r.stderr);
        serde_json::from_str(r.stdout.lines().next().unwrap()).unwrap()
    };
    let r = run(common::in_trusted(dir.path()).args(["skills", "list", "--json"])).await;
    assert_eq!(listed(r)["offered"], false);
    // Trusted, they are offered (and no longer said to wait).
    common::trust_folder(dir.path());
    let r = run(common::in_trusted(dir.path()).args(["skills", "list", "--json"])).await;
    assert_eq!(listed(r)["offered"], true);
    let r = run(&mut ask(dir.path(), &server, &[])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("kite trust"), "{}", r.stderr);
    let second = &bodies(&server)[1];
    assert!(second.to_string().contains("word-count"), "{second}");
    // A skill folder others may write in, inside the trusted one, is left out.
    use std::os::unix::fs::PermissionsExt;
    let open = dir.path().join(".agents/skills/word-count");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let r = run(common::in_trusted(dir.path()).args(["skills", "list"])).await;
    assert!(r.stderr.contains("others may write in"), "{}", r.stderr);
    assert!(!r.stdout.contains("word-count"), "{}", r.stdout);
}

#[tokio::test]
async fn a_waiting_project_skill_does_not_hide_the_users_one_of_the_same_name() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let config = dir.path().join("config");
    copy(
        &fixtures().join("valid/word-count"),
        &project.join(".agents/skills/word-count"),
    );
    copy(
        &fixtures().join("valid/word-count"),
        &config.join("kite/skills/word-count"),
    );
    std::fs::write(project.join("kite.toml"), "").unwrap();
    let list = |args: &[&str]| {
        let mut c = common::in_trusted(&project);
        c.env("XDG_CONFIG_HOME", &config)
            .args(["skills"])
            .args(args);
        c
    };
    // As `kite ask` sees it: the user's skill is offered; the project's waits, hiding
    // nothing.
    let r = run(&mut list(&["list", "--json"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{}", r.stdout);
    let from = |v: &Value| v["path"].as_str().unwrap_or_default().to_owned();
    assert_eq!(lines[0]["offered"], true, "{}", r.stdout);
    assert!(from(&lines[0]).contains("/config/"), "{}", r.stdout);
    assert_eq!(lines[1]["offered"], false, "{}", r.stdout);
    assert!(from(&lines[1]).contains("/project/"), "{}", r.stdout);
    assert!(!r.stderr.contains("is hidden"), "{}", r.stderr);
    let r = run(&mut list(&["show", "word-count"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("/config/"), "{}", r.stdout);
    assert!(!r.stdout.contains("not offered"), "{}", r.stdout);
    // Trusted, the project's is nearer: it is offered, and the user's is hidden.
    common::trust_folder(&project);
    let r = run(&mut list(&["list", "--json"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    assert!(r.stdout.contains("/project/"), "{}", r.stdout);
    assert!(r.stderr.contains("is hidden by"), "{}", r.stderr);
}
