//! A client's tools in kite's terms, and their calls back in the client's.

use super::*;

fn tools(given: Value) -> (ClientTools, Vec<ToolSpec>, Vec<Value>) {
    let mut tools = ClientTools::default();
    let (mut specs, mut hosted) = (Vec::new(), Vec::new());
    for t in given.as_array().unwrap() {
        tools.add(None, t, &mut specs, &mut hosted).unwrap();
    }
    (tools, specs, hosted)
}

#[test]
fn each_kind_of_call_goes_back_as_its_tool_asks() {
    let (tools, specs, hosted) = tools(json!([
        {"type": "namespace", "name": "ns", "description": "",
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}]},
        {"type": "custom", "name": "exec", "format": {"type": "grammar",
            "syntax": "lark", "definition": "start: /.+/"}},
        {"type": "local_shell"},
        {"type": "apply_patch"},
        {"type": "web_search"}]));
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["ns__f", "exec", "local_shell", "apply_patch"]);
    assert!(specs[1].description.contains("start: /.+/"));
    assert_eq!(hosted, vec![json!({"type": "web_search"})]);

    let item = |name: &str, args: &str| tools.call_item("fc_1", "completed", "c1", name, args);
    let f = item("ns__f", r#"{"a":1}"#);
    assert_eq!(
        (&f["type"], &f["namespace"], &f["name"]),
        (&json!("function_call"), &json!("ns"), &json!("f"))
    );
    let c = item("exec", r#"{"input":"ls -l"}"#);
    assert_eq!(
        (&c["type"], &c["input"]),
        (&json!("custom_tool_call"), &json!("ls -l"))
    );
    let l = item("local_shell", r#"{"command":["ls"]}"#);
    assert_eq!(l["type"], "local_shell_call");
    assert_eq!(l["action"], json!({"type": "exec", "command": ["ls"]}));
    let p = item(
        "apply_patch",
        r#"{"type":"create_file","path":"a","diff":"x"}"#,
    );
    assert_eq!(p["type"], "apply_patch_call");
    assert_eq!(p["operation"]["path"], "a");
    // A call of a tool the client did not give, or one it could not read, goes back
    // as a function call.
    assert_eq!(item("other", "{}")["type"], "function_call");
    assert_eq!(
        item("local_shell", r#"{"cmd":"ls"}"#)["type"],
        "function_call"
    );
    assert_eq!(item("apply_patch", "not json")["type"], "function_call");
}

#[test]
fn long_names_are_cut_and_hashed_the_same_way_each_time() {
    let long = "n".repeat(60);
    let given = json!([{"type": "namespace", "name": long, "description": "",
        "tools": [{"type": "function", "name": "first"}, {"type": "function", "name": "second"}]}]);
    let (once, specs, _) = tools(given.clone());
    let (_, again, _) = tools(given);
    assert!(specs.iter().all(|s| s.name.len() <= MAX_NAME));
    assert_ne!(specs[0].name, specs[1].name);
    assert_eq!(specs[0].name, again[0].name);
    let back = once.call_item("fc", "completed", "c", &specs[1].name, "{}");
    assert_eq!(
        (&back["namespace"], &back["name"]),
        (&json!(long), &json!("second"))
    );
}

#[test]
fn a_tool_given_twice_and_account_tools_are_refused() {
    let mut tools = ClientTools::default();
    let (mut specs, mut hosted) = (Vec::new(), Vec::new());
    let f = json!({"type": "function", "name": "a__b"});
    tools.add(None, &f, &mut specs, &mut hosted).unwrap();
    let ns =
        json!({"type": "namespace", "name": "a", "tools": [{"type": "function", "name": "b"}]});
    let twice = tools.add(None, &ns, &mut specs, &mut hosted).unwrap_err();
    assert!(twice.contains("given twice"), "{twice}");
    let search = json!({"type": "file_search", "vector_store_ids": ["vs_1"]});
    let refused = tools
        .add(None, &search, &mut specs, &mut hosted)
        .unwrap_err();
    assert!(refused.contains("file_search"), "{refused}");
}
