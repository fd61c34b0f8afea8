//! A string that borrows from the input when it has no escapes, and the small helpers the
//! typed wire shapes share.

use serde::de::{Deserialize, Deserializer, Visitor};
use std::borrow::Cow;

/// Serde's `Cow<str>` only borrows as a direct field; this one also borrows inside `Option`.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Str<'a>(pub Cow<'a, str>);

/// The text of `s`, or empty.
pub(crate) fn text(s: Option<Str>) -> String {
    s.map(Str::into_string).unwrap_or_default()
}

/// `raw` as a [`serde_json::Value`], for what is kept or passed through whole.
pub(crate) fn value(raw: &serde_json::value::RawValue) -> serde_json::Value {
    serde_json::from_str(raw.get()).unwrap_or(serde_json::Value::Null)
}

impl Str<'_> {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
    pub(crate) fn into_string(self) -> String {
        self.0.into_owned()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A string field read leniently: a string is kept (borrowed when it can be), and any other
/// JSON value reads as no string, so an event kite does not know never fails on it.
#[derive(Debug, Default)]
pub(crate) struct AnyStr<'a>(pub Option<Str<'a>>);

impl<'a> AnyStr<'a> {
    /// The text, or empty.
    pub(crate) fn text(self) -> String {
        text(self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for AnyStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, SeqAccess};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyStr<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(AnyStr(Some(Str(Cow::Borrowed(v)))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(AnyStr(Some(Str(Cow::Owned(v.to_owned())))))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(AnyStr(Some(Str(Cow::Owned(v)))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(AnyStr(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(AnyStr(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(AnyStr(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(AnyStr(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(AnyStr(None))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(AnyStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(AnyStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(AnyStr(None))
            }
        }
        d.deserialize_any(V)
    }
}
