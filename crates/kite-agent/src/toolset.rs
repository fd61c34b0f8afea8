//! The tools a run may call, looked up by name, changeable while runs use them.

use crate::tool::Tool;
use kite_core::{ToolCall, ToolSpec};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::{Arc, RwLock};

/// A set of tools shared by an agent and whoever changes it: clones see the same tools.
///
/// Filters decide which tools are offered to the model and may be called: an allow list
/// (when set, only those) and a reject list (never those).
pub struct ToolSet<C = ()> {
    inner: Arc<RwLock<Inner<C>>>,
}

impl<C> Clone for ToolSet<C> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<C> Default for ToolSet<C> {
    fn default() -> Self {
        Self {
            inner: Arc::new(RwLock::new(Inner {
                tools: Vec::new(),
                allow: None,
                reject: HashSet::new(),
            })),
        }
    }
}

struct Inner<C> {
    tools: Vec<Entry<C>>,
    allow: Option<HashSet<String>>,
    reject: HashSet<String>,
}

struct Entry<C> {
    tool: Arc<dyn Tool<C>>,
    /// Compiled once; `None` when the schema itself could not be compiled.
    validator: Option<Arc<jsonschema::Validator>>,
}

impl<C> Inner<C> {
    fn enabled(&self, name: &str) -> bool {
        !self.reject.contains(name) && self.allow.as_ref().is_none_or(|a| a.contains(name))
    }
}

/// A call ready to run: the tool and its checked arguments.
pub(crate) struct Prepared<C> {
    pub tool: Arc<dyn Tool<C>>,
    pub args: Value,
}

impl<C: 'static> ToolSet<C> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner<C>> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner<C>> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// An independent copy: the same tools and filters, and changes to either set are not
    /// seen by the other.
    pub fn fork(&self) -> Self {
        let inner = self.read();
        Self {
            inner: Arc::new(RwLock::new(Inner {
                tools: inner
                    .tools
                    .iter()
                    .map(|e| Entry {
                        tool: e.tool.clone(),
                        validator: e.validator.clone(),
                    })
                    .collect(),
                allow: inner.allow.clone(),
                reject: inner.reject.clone(),
            })),
        }
    }

    /// Adds a tool, replacing one of the same name.
    pub fn add(&self, tool: impl Tool<C>) {
        self.add_arc(Arc::new(tool));
    }

    /// Adds a shared tool, replacing one of the same name.
    pub fn add_arc(&self, tool: Arc<dyn Tool<C>>) {
        let validator = match jsonschema::validator_for(&tool.spec().parameters) {
            Ok(v) => Some(Arc::new(v)),
            Err(e) => {
                tracing::warn!(tool = %tool.spec().name, error = %e, "tool schema does not compile; arguments go unchecked");
                None
            }
        };
        let mut inner = self.write();
        inner
            .tools
            .retain(|e| e.tool.spec().name != tool.spec().name);
        inner.tools.push(Entry { tool, validator });
    }

    /// Removes the tool called `name`; false when there was none.
    pub fn remove(&self, name: &str) -> bool {
        let mut inner = self.write();
        let before = inner.tools.len();
        inner.tools.retain(|e| e.tool.spec().name != name);
        inner.tools.len() != before
    }

    /// Offers only these tools (`None`: all).
    pub fn allow_only<I, S>(&self, names: Option<I>)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.write().allow = names.map(|n| n.into_iter().map(Into::into).collect());
    }

    /// Never offers these tools.
    pub fn reject<I, S>(&self, names: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.write()
            .reject
            .extend(names.into_iter().map(Into::into));
    }

    /// Clears the reject list.
    pub fn clear_rejects(&self) {
        self.write().reject.clear();
    }

    /// The specs of the tools offered now, in the order they were added.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let inner = self.read();
        inner
            .tools
            .iter()
            .filter(|e| inner.enabled(&e.tool.spec().name))
            .map(|e| e.tool.spec().clone())
            .collect()
    }

    /// The names of the tools offered now.
    pub fn names(&self) -> Vec<String> {
        self.specs().into_iter().map(|s| s.name).collect()
    }

    /// The tool offered under `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool<C>>> {
        let inner = self.read();
        inner
            .tools
            .iter()
            .find(|e| e.tool.spec().name == name && inner.enabled(name))
            .map(|e| e.tool.clone())
    }

    /// The tool and parsed arguments for `call`, or what to tell the model when the call
    /// cannot be made: an unknown tool, arguments that are not JSON or do not fit the schema.
    pub(crate) fn prepare(&self, call: &ToolCall) -> Result<Prepared<C>, String> {
        let (tool, validator) = {
            let inner = self.read();
            let found = inner
                .tools
                .iter()
                .find(|e| e.tool.spec().name == call.name && inner.enabled(&call.name));
            match found {
                Some(e) => (e.tool.clone(), e.validator.clone()),
                None => {
                    let names: Vec<&str> = inner
                        .tools
                        .iter()
                        .map(|e| e.tool.spec().name.as_str())
                        .filter(|n| inner.enabled(n))
                        .collect();
                    return Err(format!(
                        "unknown tool `{}`; the tools are: {}",
                        call.name,
                        if names.is_empty() {
                            "none".to_owned()
                        } else {
                            names.join(", ")
                        }
                    ));
                }
            }
        };
        let args = call
            .parse_arguments()
            .map_err(|e| format!("the arguments are not valid JSON ({e}): {}", call.arguments))?;
        if let Some(v) = validator {
            let problems: Vec<String> = v
                .iter_errors(&args)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    if at.is_empty() {
                        e.to_string()
                    } else {
                        format!("{e} (at {at})")
                    }
                })
                .collect();
            if !problems.is_empty() {
                return Err(format!(
                    "the arguments do not match the tool's schema: {}",
                    problems.join("; ")
                ));
            }
        }
        Ok(Prepared { tool, args })
    }
}
