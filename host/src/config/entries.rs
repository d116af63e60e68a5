//! What `evo config show` prints: every setting as a dotted key, its value, and where it
//! came from.

use super::{Config, Policy, Source};

impl Config {
    /// Every value as a dotted key, its value as JSON, and where it came from, in key
    /// order: what `evo config show` prints.
    pub fn entries(&self) -> Vec<(String, serde_json::Value, Source)> {
        let mut values = Vec::new();
        if let Ok(value) = serde_json::to_value(self) {
            flatten("", &value, &mut values);
        }
        flatten("grants", &grants_json(&self.grants), &mut values);
        values.sort_by(|a, b| a.0.cmp(&b.0));
        values
            .into_iter()
            .map(|(key, value)| {
                let source = self.source(&key);
                (key, value, source)
            })
            .collect()
    }
}

fn flatten(prefix: &str, value: &serde_json::Value, out: &mut Vec<(String, serde_json::Value)>) {
    match value {
        serde_json::Value::Object(fields) => {
            for (key, value) in fields {
                let key = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&key, value, out);
            }
        }
        other => out.push((prefix.to_owned(), other.clone())),
    }
}

/// The grant policy as `evo config show` prints it: each kind of capability's value.
fn grants_json(policy: &Policy) -> serde_json::Value {
    fn one(policy: &Policy) -> serde_json::Value {
        crate::capabilities::ALL
            .iter()
            .map(|capability| (capability.key().to_owned(), capability.show(policy)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }
    let mut value = one(policy);
    if !policy.skills.is_empty() {
        value["skill"] = policy
            .skills
            .iter()
            .map(|(name, p)| (name.clone(), one(p)))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    value
}
