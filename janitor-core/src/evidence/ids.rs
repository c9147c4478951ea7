//! The identifiers evidence refers to: subject labels (`sub_` + 64 hex), device-link ids (`dev_` + 64 hex),
//! and serde for visitor ids in stored records.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::label::LABEL_PREFIX;
use crate::visitor::VisitorId;

/// Prefix of a device-link id: a verification label with `sub_` swapped for it.
pub const LINK_PREFIX: &str = "dev_";
const LABEL_HEX: usize = 64;

fn is_labelled(value: &str, prefix: &str) -> bool {
    value.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == LABEL_HEX && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// A subject (or actor) label, `^sub_[a-f0-9]{64}$`: the label of an account id, never the account id itself.
/// [`LabelKey::subject`](crate::LabelKey::subject) makes one.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubjectId(String);

impl SubjectId {
    /// Accepts exactly `^sub_[a-f0-9]{64}$`.
    pub fn parse(value: &str) -> Option<Self> {
        is_labelled(value, LABEL_PREFIX).then(|| SubjectId(value.to_owned()))
    }

    /// Wraps a label made by [`LabelKey`](crate::LabelKey), which always has the subject format.
    pub(crate) fn from_label(label: String) -> Self {
        debug_assert!(is_labelled(&label, LABEL_PREFIX));
        SubjectId(label)
    }

    /// The label as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SubjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SubjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Pseudonymous, but an identifier all the same: logs get a prefix only.
        write!(f, "SubjectId({}…)", &self.0[..LABEL_PREFIX.len() + 6])
    }
}

impl Serialize for SubjectId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SubjectId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        SubjectId::parse(&text)
            .ok_or_else(|| serde::de::Error::custom("a subject id is sub_ and 64 hex digits"))
    }
}

/// A device-link id, `^dev_[a-f0-9]{64}$`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkId(String);

impl LinkId {
    /// Accepts exactly `^dev_[a-f0-9]{64}$`.
    pub fn parse(value: &str) -> Option<Self> {
        is_labelled(value, LINK_PREFIX).then(|| LinkId(value.to_owned()))
    }

    /// The id of the link a verification label creates: the label with `sub_` replaced by `dev_`.
    pub(crate) fn from_verification(label: &str) -> Option<Self> {
        let hex = label.strip_prefix(LABEL_PREFIX)?;
        LinkId::parse(&format!("{LINK_PREFIX}{hex}"))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LinkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for LinkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LinkId({}…)", &self.0[..LINK_PREFIX.len() + 6])
    }
}

impl Serialize for LinkId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for LinkId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        LinkId::parse(&text)
            .ok_or_else(|| serde::de::Error::custom("a device-link id is dev_ and 64 hex digits"))
    }
}

/// Serde for a [`VisitorId`] field of a stored record (the id as its text).
pub(crate) mod visitor_text {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        id: &VisitorId,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(id.as_str())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<VisitorId, D::Error> {
        let text = String::deserialize(deserializer)?;
        VisitorId::parse(&text)
            .ok_or_else(|| serde::de::Error::custom("a visitor id is vis_ and 48 hex digits"))
    }
}

/// The same for an optional one.
pub(crate) mod optional_visitor_text {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        id: &Option<VisitorId>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => serializer.serialize_some(id.as_str()),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<VisitorId>, D::Error> {
        match Option::<String>::deserialize(deserializer)? {
            None => Ok(None),
            Some(text) => VisitorId::parse(&text)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom("a visitor id is vis_ and 48 hex digits")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let hex = "a".repeat(64);
        assert!(SubjectId::parse(&format!("sub_{hex}")).is_some());
        assert!(SubjectId::parse(&format!("sub_{}", "a".repeat(63))).is_none());
        assert!(SubjectId::parse(&format!("sub_{}", "a".repeat(65))).is_none());
        assert!(SubjectId::parse(&format!("sub_{}", "A".repeat(64))).is_none());
        assert!(SubjectId::parse(&format!("dev_{hex}")).is_none());
        assert!(SubjectId::parse(&format!(" sub_{hex}")).is_none());
        assert!(LinkId::parse(&format!("dev_{hex}")).is_some());
        assert!(LinkId::parse(&format!("sub_{hex}")).is_none());
        assert_eq!(
            LinkId::from_verification(&format!("sub_{hex}"))
                .unwrap()
                .as_str(),
            format!("dev_{hex}")
        );
        let subject = SubjectId::parse(&format!("sub_{hex}")).unwrap();
        assert_eq!(format!("{subject:?}"), "SubjectId(sub_aaaaaa…)");
        assert_eq!(
            serde_json::to_string(&subject).unwrap(),
            format!("\"sub_{hex}\"")
        );
        assert!(serde_json::from_str::<SubjectId>("\"sub_1\"").is_err());
    }
}
