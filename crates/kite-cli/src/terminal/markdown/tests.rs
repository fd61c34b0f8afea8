//! Tests of the streamed Markdown rendering.

use super::Markdown;

/// `markdown` pushed whole, then finished.
fn whole(markdown: &str) -> String {
    let mut renderer = Markdown::new();
    let mut out = renderer.push(markdown);
    out.push_str(&renderer.finish());
    out
}

/// `markdown` pushed in fragments of `size` characters, then finished.
fn in_fragments(markdown: &str, size: usize) -> String {
    let chars: Vec<char> = markdown.chars().collect();
    let mut renderer = Markdown::new();
    let mut out = String::new();
    for piece in chars.chunks(size) {
        out.push_str(&renderer.push(&piece.iter().collect::<String>()));
    }
    out.push_str(&renderer.finish());
    out
}

/// `text` without its SGR escapes (`ESC [ ... m`).
fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut in_escape = false;
    for c in text.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (false, c) => out.push(c),
            (true, 'm') => in_escape = false,
            (true, _) => {}
        }
    }
    out
}

/// Every block kind, with a code block holding a blank line and non-ASCII text.
const DOCUMENT: &str = "# Title

Some *emphasis*, **strong**, ~~gone~~ and `code`, a [link](https://example.com) and ünïcödé → ✓.
A second line.

> A quote with **bold**
> over two lines.

- one
- two
  - nested
- [x] done

3. three
4. four

```rust
fn main() {

    println!(\"hi\");
}
```

| Name | Value |
|:-----|------:|
| a    | 1     |
| ccc  | 22    |

---

~~~
plain ``` text
~~~
Last paragraph.
";

#[test]
fn fragments_of_any_size_render_as_the_whole() {
    let expected = whole(DOCUMENT);
    for size in 1..=7 {
        assert_eq!(
            in_fragments(DOCUMENT, size),
            expected,
            "fragments of {size} characters"
        );
    }
    let shown = plain(&expected);
    assert!(
        shown.starts_with("Title\n\nSome emphasis, strong, gone and code, a link"),
        "{shown}"
    );
    assert!(
        shown.contains("ünïcödé → ✓.\nA second line.\n\n"),
        "{shown}"
    );
    assert!(
        shown.contains("│ A quote with bold\n│ over two lines.\n\n"),
        "{shown}"
    );
    assert!(shown.contains("• one\n• two\n  • nested\n• [x] done\n\n3. three\n4. four\n"));
    assert!(
        shown.contains("  fn main() {\n\n      println!(\"hi\");\n  }\n\n"),
        "{shown}"
    );
    assert!(
        shown.contains("Name │ Value\n─────┼──────\na    │     1\nccc  │    22\n"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("\n\n{}\n\n", "─".repeat(40))),
        "{shown}"
    );
    assert!(
        shown.ends_with("  plain ``` text\n\nLast paragraph.\n"),
        "{shown}"
    );
    assert!(expected.contains("\x1b[38;2;"));
}

#[test]
fn a_heading_waits_for_the_blank_line_after_it() {
    let mut renderer = Markdown::new();
    assert_eq!(renderer.push("# Tit"), "");
    assert_eq!(renderer.push("le\n"), "");
    assert_eq!(renderer.push("\n"), "\x1b[1;4;35mTitle\x1b[0m\n");
    assert_eq!(renderer.push("## Next\n\n"), "\n\x1b[1;36mNext\x1b[0m\n");
    assert_eq!(renderer.finish(), "");
}

#[test]
fn a_code_block_comes_a_line_at_a_time_and_is_not_split_at_its_blank_lines() {
    let mut renderer = Markdown::new();
    assert_eq!(plain(&renderer.push("```\nfirst\n\nsec")), "  first\n\n");
    assert_eq!(plain(&renderer.push("ond\n\n")), "  second\n\n");
    assert_eq!(renderer.push("``"), "");
    assert_eq!(renderer.push("`"), "");
    assert_eq!(renderer.push("\nafter"), "");
    assert_eq!(plain(&renderer.finish()), "\nafter\n");
}

#[test]
fn a_longer_fence_needs_a_longer_closing_one() {
    let mut renderer = Markdown::new();
    assert_eq!(
        plain(&renderer.push("````md\n```\n\ninside\n```\n\n")),
        "  ```\n\n  inside\n  ```\n\n"
    );
    assert_eq!(renderer.push("````\n"), "");
    assert_eq!(plain(&renderer.push("next\n\n")), "\nnext\n");
}

#[test]
fn a_huge_code_block_is_rendered_in_bounded_pieces() {
    // 430 KB of code at once: each piece is a few dozen lines, so a Ctrl-C between
    // pieces is heard at once; a line too long to highlight quickly is shown plain.
    let mut renderer = Markdown::new();
    let line = "    total = compute(alpha, beta, gamma) + other_value  # a comment\n";
    let long = format!("x = \"{}\"\n", "y".repeat(5_000));
    let code = format!("```python\n{long}{}```\n\nafter\n\n", line.repeat(6_500));
    assert!(code.len() > 430_000);
    renderer.feed(&code);
    let first = renderer.next_piece().unwrap();
    assert!(first.matches('\n').count() <= 64, "{}", first.len());
    assert!(
        first.contains(&format!("\x1b[2mx = \"{}", "y".repeat(100))),
        "shown plain"
    );
    let mut pieces = 1;
    while let Some(piece) = renderer.next_piece() {
        assert!(piece.matches('\n').count() <= 65);
        pieces += 1;
    }
    assert!(pieces > 100, "{pieces}");
    assert_eq!(renderer.finish(), "");
    // Abandoned, nothing more comes of it.
    let mut renderer = Markdown::new();
    renderer.feed(&code);
    let _ = renderer.next_piece();
    renderer.abandon();
    assert_eq!(renderer.next_piece(), None);
    assert_eq!(renderer.finish(), "");
}

#[test]
fn known_languages_are_highlighted() {
    let out = whole("```rust\nfn main() {}\n```\n");
    assert!(out.contains("\x1b[38;2;"), "{out:?}");
    assert_eq!(plain(&out), "  fn main() {}\n");
    let out = whole("```nosuchlanguage\nfn main() {}\n```\n");
    assert!(!out.contains("\x1b[38;2;"), "{out:?}");
    assert_eq!(out, "  \x1b[2mfn main() {}\x1b[0m\n");
    let out = whole("    indented code\n");
    assert_eq!(out, "  \x1b[2mindented code\x1b[0m\n");
}

#[test]
fn the_models_escapes_are_shown_not_obeyed() {
    let osc = "\u{1b}]0;owned\u{7}";
    let markdown = format!(
        "Title {osc} `{osc}` [a{osc}](http://e.com/{osc}) ![{osc}](x)\n\n\
         | {osc} | b |\n|---|---|\n| c | {osc} |\n\n\
         ```\n{osc}\n```\n\n```rust\nlet a = \"{osc}\";\n```\n\n<b>{osc}</b>\n"
    );
    let out = whole(&markdown);
    assert!(!out.contains("\u{1b}]"), "{out:?}");
    assert!(!out.contains('\u{7}'), "{out:?}");
    assert!(out.contains("\\u{1b}]0;owned\\u{7}"), "{out:?}");
    // The renderer's own escapes are all SGR sequences.
    for (index, _) in out.match_indices('\u{1b}') {
        assert!(out[index + 1..].starts_with('['), "{out:?}");
    }
}

#[test]
fn a_list_in_a_quote_keeps_the_quote_bar() {
    let out = whole("> - **bold** item\n");
    assert_eq!(out, "\x1b[2m│ \x1b[0m• \x1b[1mbold\x1b[0m item\n");
    let out = whole("> a\n>\n> b\n");
    assert_eq!(plain(&out), "│ a\n│ \n│ b\n");
}

#[test]
fn nested_styles_are_restored() {
    let out = whole("**bold *both* bold**\n");
    assert_eq!(out, "\x1b[1mbold \x1b[3mboth\x1b[0m\x1b[1m bold\x1b[0m\n");
    let out = whole("*a\nb* ~~c~~\n");
    assert_eq!(out, "\x1b[3ma\x1b[0m\n\x1b[3mb\x1b[0m \x1b[9mc\x1b[0m\n");
}

#[test]
fn a_table_separates_its_cells() {
    let out = whole("| A | B |\n|---|---|\n| 1 | 22 |\n");
    assert!(
        out.starts_with("\x1b[1mA\x1b[0m │ \x1b[1mB\x1b[0m\n"),
        "{out:?}"
    );
    assert_eq!(plain(&out), "A │ B\n──┼───\n1 │ 22\n");
}

#[test]
fn lists_show_their_markers() {
    assert_eq!(plain(&whole("3. three\n4. four\n")), "3. three\n4. four\n");
    assert_eq!(plain(&whole("- a\n  - b\n- c\n")), "• a\n  • b\n• c\n");
    let tasks = whole("- [x] done\n- [ ] todo\n");
    assert_eq!(plain(&tasks), "• [x] done\n• [ ] todo\n");
    assert_eq!(plain(&whole("- a\n\n- b\n")), "• a\n\n• b\n");
}

#[test]
fn links_and_images_show_their_urls() {
    let out = whole("[text](https://x.io) and <https://y.io> ![alt](p.png)\n");
    assert_eq!(
        plain(&out),
        "text (https://x.io) and https://y.io [image: alt] (p.png)\n"
    );
    assert!(
        out.starts_with("\x1b[4mtext\x1b[0m \x1b[2m(https://x.io)\x1b[0m"),
        "{out:?}"
    );
}

#[test]
fn finish_renders_an_unterminated_code_block() {
    let mut renderer = Markdown::new();
    let mut out = renderer.push("```python\nprint(1)\n\nprint(2)");
    out.push_str(&renderer.finish());
    assert!(out.contains("\x1b[38;2;"), "{out:?}");
    assert_eq!(plain(&out), "  print(1)\n\n  print(2)\n");
    assert_eq!(renderer.finish(), "");
}

#[test]
fn blocks_are_separated_by_one_blank_line() {
    assert_eq!(Markdown::new().finish(), "");
    assert_eq!(whole("\n\n  \n"), "");
    assert_eq!(
        plain(&whole("one\n\n\n\ntwo\nthree\n")),
        "one\n\ntwo\nthree\n"
    );
    assert_eq!(plain(&whole("one  \ntwo\\\nthree")), "one\ntwo\nthree\n");
    assert_eq!(
        plain(&whole("# T\ntext\n***\n")),
        format!("T\n\ntext\n\n{}\n", "─".repeat(40))
    );
}

#[test]
fn odd_input_does_not_panic() {
    let inputs = [
        "```",
        "~~~~\n~~~\n",
        "> > > - - - 1. [ ] **a",
        "|\n|-\n|",
        "| a |\n|---|\n| b | c | d |\n",
        "-\n\n1.\n",
        "*a **b* c**",
        "[a](<>) ![](",
        "\r\n\r\n# x\r\n\r\n```\r\ny\r\n```\r\n",
        "\t- x\n\t\t```\n\n\t\t```\n",
        "<pre>\n\n</pre>\n",
        "1234567890. x\n999999999. y\n",
        "é\u{0}\u{1b}[2J\u{9b}",
    ];
    for input in inputs {
        let expected = whole(input);
        for size in 1..=3 {
            assert_eq!(in_fragments(input, size), expected, "{input:?}");
        }
        assert!(!expected.contains("\u{1b}[2J"), "{input:?}");
    }
}

#[test]
fn wide_characters_keep_table_columns_aligned() {
    let out = whole("| a | b |\n|---|---|\n| 漢字 | x |\n| ab | y |\n\n");
    let rows: Vec<String> = out
        .lines()
        .map(plain)
        .filter(|l| l.contains('│') && (l.contains('x') || l.contains('y')))
        .collect();
    assert_eq!(rows.len(), 2, "{out:?}");
    let column = |row: &str| unicode_width::UnicodeWidthStr::width(row.split('│').next().unwrap());
    assert_eq!(column(&rows[0]), column(&rows[1]), "{rows:?}");
}

#[test]
fn code_in_a_quote_is_highlighted_within_a_budget_and_a_huge_block_is_shown_plain() {
    let code_line = "    value = compute(alpha, beta)  # c\n";
    let block = format!(
        "> ```python\n{}> ```\n",
        format!("> {code_line}").repeat(4500)
    );
    let rendered = whole(&block);
    let highlighted = rendered
        .lines()
        .filter(|l| l.contains("\x1b[38;2;"))
        .count();
    let dim = rendered
        .lines()
        .filter(|l| l.contains("\x1b[2m    value"))
        .count();
    // 64 KiB of ~36-byte lines: under 2,000 highlighted of 4,500, the rest plain.
    assert!(highlighted > 100 && highlighted < 2000, "{highlighted}");
    assert!(dim > 2500, "{dim}");
    // A paragraph past 256 KiB is its text as it is, made printable.
    let huge = format!("{}\u{1b}[2J end\n\n", "word **bold** ".repeat(20_000));
    let out = whole(&huge);
    assert!(
        out.contains("word **bold** word"),
        "not rendered as Markdown"
    );
    assert!(out.contains("\\u{1b}[2J end"), "made printable");
}

#[test]
fn a_long_answer_of_text_then_a_fence_renders_whole_in_any_fragments() {
    // Past 64 KiB the buffer is trimmed; a fence right after text, there, once cut the
    // buffer under the renderer's feet.
    let mut text = String::new();
    for i in 0..2400 {
        text.push_str(&format!("Line {i} of the answer, long enough to matter.\n"));
        if i % 300 == 299 {
            text.push_str("Install it:\n```bash\napt install kite\n```\n\n");
        }
    }
    let expected = whole(&text);
    for size in [3, 64, 1000] {
        assert_eq!(in_fragments(&text, size), expected, "fragments of {size}");
    }
    assert!(plain(&expected).contains("  apt install kite"));
}

#[test]
fn text_wraps_between_words_and_code_does_not() {
    let mut renderer = Markdown::new().wrapped_at(20);
    let out = renderer.push(
        "The quick brown fox jumps over the **la**zy dog again and again.\n\n\
         - a list item that runs past the edge\n\n\
         ```\nlet code = \"stays on one line however long it is\";\n```\n\n",
    );
    let out = out + &renderer.finish();
    let plain = plain(&out);
    for line in plain.lines() {
        let code = line.contains("let code");
        assert!(
            code || unicode_width::UnicodeWidthStr::width(line) <= 20,
            "{line:?} in {plain}"
        );
    }
    // Every word whole, on one line or another, `la` and `zy` together.
    for word in ["quick", "jumps", "lazy", "again.", "item", "edge"] {
        assert!(
            plain.split_whitespace().any(|w| w == word),
            "{word} in {plain}"
        );
    }
    // A list item's later lines stand under its text.
    assert!(
        plain.contains("• a list item that\n  runs past the edge"),
        "{plain}"
    );
    assert!(
        plain.contains("let code = \"stays on one line however long it is\";"),
        "{plain}"
    );
}
