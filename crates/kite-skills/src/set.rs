//! A set of skills: folders and archives found on disk, and native skills registered in
//! code, each under a name that is unique in the set.

use crate::discover::Discovery;
use crate::prompt::available_skills;
use crate::skill::{Invalid, Skill};
use crate::validate::{self, Frontmatter};
use kite_agent::Tool;
use std::path::Path;
use std::sync::Arc;

/// A skill backed by Rust functions instead of scripts: a name and description like any
/// skill's, instructions the model loads when it wants them, and the tools it may call.
///
/// ```
/// use kite_agent::{ToolContext, ToolError, tool};
/// use kite_skills::{NativeSkill, SkillSet};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Invoice {
///     /// The invoice's number.
///     number: u32,
/// }
///
/// let lookup = tool("invoice_total", "The total of an invoice", |a: Invoice, _: ToolContext<()>| async move {
///     Ok::<_, ToolError>(format!("invoice {}: 120.00 EUR", a.number))
/// });
/// let mut skills = SkillSet::new();
/// skills
///     .add_native(
///         NativeSkill::new(
///             "invoices",
///             "Answer questions about invoices. Use when an invoice number is mentioned.",
///             "Call invoice_total with the number, then answer with the total and currency.",
///         )
///         .tool(lookup),
///     )
///     .unwrap();
/// assert_eq!(skills.names(), ["invoices"]);
/// ```
pub struct NativeSkill<C = ()> {
    meta: Frontmatter,
    instructions: String,
    tools: Vec<Arc<dyn Tool<C>>>,
}

impl<C: Send + Sync + 'static> NativeSkill<C> {
    /// A native skill; its name and description follow the same rules as a folder's.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        instructions: impl Into<String>,
    ) -> Self {
        Self {
            meta: Frontmatter {
                name: name.into(),
                description: description.into(),
                ..Frontmatter::default()
            },
            instructions: instructions.into(),
            tools: Vec::new(),
        }
    }

    /// Adds a tool the model may call.
    pub fn tool(mut self, tool: impl Tool<C>) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }
}

/// What a skill in a set is.
pub(crate) enum Kind<C> {
    /// On disk.
    Folder(Skill),
    /// Registered in code.
    Native(NativeSkill<C>),
}

/// Skills under unique names, in the order added.
pub struct SkillSet<C = ()> {
    pub(crate) skills: Vec<Kind<C>>,
}

impl<C> Default for SkillSet<C> {
    fn default() -> Self {
        Self { skills: Vec::new() }
    }
}

impl<C: Send + Sync + 'static> SkillSet<C> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The valid skills a search found.
    pub fn from_discovery(found: &Discovery) -> Self {
        let mut set = Self::new();
        for skill in &found.skills {
            // Discovery keeps names unique already.
            let _ = set.add(skill.clone());
        }
        set
    }

    /// Adds a skill; a name already in the set is refused.
    pub fn add(&mut self, skill: Skill) -> Result<(), Invalid> {
        self.check_unique(skill.name(), &skill.source)?;
        self.skills.push(Kind::Folder(skill));
        Ok(())
    }

    /// Adds a native skill, after checking its name and description.
    pub fn add_native(&mut self, skill: NativeSkill<C>) -> Result<(), Invalid> {
        let here = Path::new("<native>");
        // A JSON string is a YAML double-quoted scalar: the same checks as a file's.
        let frontmatter = format!(
            "---\nname: {}\ndescription: {}\n---\n",
            serde_json::Value::from(skill.meta.name.as_str()),
            serde_json::Value::from(skill.meta.description.as_str()),
        );
        validate::check(here, None, &frontmatter).map_err(|problems| Invalid {
            path: here.join(&skill.meta.name),
            problems,
        })?;
        self.check_unique(&skill.meta.name, here)?;
        self.skills.push(Kind::Native(skill));
        Ok(())
    }

    fn check_unique(&self, name: &str, path: &Path) -> Result<(), Invalid> {
        match self.names().contains(&name) {
            true => Err(Invalid::one(
                path,
                path,
                validate::Rule::NameFolder,
                format!("a skill named '{name}' is in the set already"),
            )),
            false => Ok(()),
        }
    }

    /// The skills' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|k| k.meta().name.as_str()).collect()
    }

    /// How many skills.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skill on disk named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find_map(|k| match k {
            Kind::Folder(s) if s.name() == name => Some(s),
            _ => None,
        })
    }

    /// The `<available_skills>` block with each skill's real location (its `SKILL.md` as an
    /// absolute path), as the reference tool prints it; for a model working through
    /// [`SkillRun`](crate::SkillRun)'s tools, its instructions give workspace paths instead.
    pub fn prompt(&self) -> String {
        available_skills(self.skills.iter().map(|k| {
            let location = match k {
                Kind::Folder(s) => s
                    .file
                    .canonicalize()
                    .unwrap_or_else(|_| s.file.clone())
                    .display()
                    .to_string(),
                Kind::Native(n) => format!("(built in: {})", n.meta.name),
            };
            (
                k.meta().name.as_str(),
                k.meta().description.as_str(),
                location,
            )
        }))
    }
}

impl<C> Kind<C> {
    pub(crate) fn meta(&self) -> &Frontmatter {
        match self {
            Kind::Folder(s) => &s.meta,
            Kind::Native(n) => &n.meta,
        }
    }

    /// The instructions (a folder's `SKILL.md` body, or a native skill's text).
    pub(crate) fn instructions(&self) -> &str {
        match self {
            Kind::Folder(s) => &s.body,
            Kind::Native(n) => &n.instructions,
        }
    }

    pub(crate) fn native_tools(&self) -> &[Arc<dyn Tool<C>>] {
        match self {
            Kind::Folder(_) => &[],
            Kind::Native(n) => &n.tools,
        }
    }
}
