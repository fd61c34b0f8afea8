//! The `<available_skills>` block: each skill's name, description and location, in the
//! format of the specification's reference tool (`agentskills to-prompt`), which agents put
//! in the system prompt so that the model knows what it can load.

/// One line per tag, no indentation, text escaped as Python's `html.escape` does.
pub fn available_skills<'a>(
    skills: impl IntoIterator<Item = (&'a str, &'a str, String)>,
) -> String {
    let mut out = String::from("<available_skills>\n");
    for (name, description, location) in skills {
        for (tag, text) in [
            ("name", escape(name.trim())),
            ("description", escape(description.trim())),
            ("location", location),
        ] {
            if tag == "name" {
                out.push_str("<skill>\n");
            }
            out.push_str(&format!("<{tag}>\n{text}\n</{tag}>\n"));
        }
        out.push_str("</skill>\n");
    }
    out.push_str("</available_skills>");
    out
}

/// `& < > " '` as `&amp; &lt; &gt; &quot; &#x27;`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_the_reference_tools_output() {
        let got = super::available_skills([(
            "pdf-reader",
            "Read & extract <text> from \"PDF\" files",
            "/tmp/skt/pdf-reader/SKILL.md".to_owned(),
        )]);
        assert_eq!(
            got,
            "<available_skills>\n<skill>\n<name>\npdf-reader\n</name>\n<description>\nRead \
             &amp; extract &lt;text&gt; from &quot;PDF&quot; files\n</description>\n\
             <location>\n/tmp/skt/pdf-reader/SKILL.md\n</location>\n</skill>\n\
             </available_skills>"
        );
    }
}
