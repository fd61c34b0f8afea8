//! Opaque provider data that must survive a round trip (reasoning signatures, encrypted
//! reasoning, provider item ids), namespaced by the codec that owns it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Provider data carried through kite's types untouched, keyed by the codec that wrote it
/// (`"chat"`, `"anthropic"`, `"responses"`, ...). A codec reads only its own namespace, so a
/// history can be sent back to the provider that produced it with nothing lost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Metadata(Map<String, Value>);

impl Metadata {
    /// Empty metadata.
    pub fn new() -> Self {
        Self::default()
    }

    /// Metadata holding one field in one namespace.
    pub fn with(namespace: &str, key: &str, value: Value) -> Self {
        let mut m = Self::new();
        m.insert(namespace, key, value);
        m
    }

    /// Sets `key` in `namespace`.
    pub fn insert(&mut self, namespace: &str, key: &str, value: Value) {
        let ns = self
            .0
            .entry(namespace)
            .or_insert_with(|| Value::Object(Map::new()));
        if !ns.is_object() {
            *ns = Value::Object(Map::new());
        }
        if let Value::Object(map) = ns {
            map.insert(key.to_owned(), value);
        }
    }

    /// The value of `key` in `namespace`, if any.
    pub fn get(&self, namespace: &str, key: &str) -> Option<&Value> {
        self.0.get(namespace)?.get(key)
    }

    /// Adds every field of `other`, replacing fields already present.
    pub fn extend(&mut self, other: Metadata) {
        for (ns, fields) in other.0 {
            match fields {
                Value::Object(map) => {
                    for (k, v) in map {
                        self.insert(&ns, &k, v);
                    }
                }
                other => {
                    self.0.insert(ns, other);
                }
            }
        }
    }

    /// Every field, as `(namespace, key, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.0.iter().flat_map(|(ns, fields)| {
            fields
                .as_object()
                .into_iter()
                .flatten()
                .map(move |(k, v)| (ns.as_str(), k.as_str(), v))
        })
    }

    /// The fields of `namespace`, as `(key, value)`.
    pub fn fields<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = (&'a str, &'a Value)> {
        self.iter()
            .filter(move |(ns, _, _)| *ns == namespace)
            .map(|(_, k, v)| (k, v))
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
