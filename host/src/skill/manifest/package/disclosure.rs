//! Three-level loading:
//!
//! 1. **metadata**, at start-up: the SKILL.md frontmatter, read by the loader and held in
//!    the registry (and, for installed skills, the install record);
//! 2. **instructions**, on first use: the SKILL.md body, parsed into sections, code blocks
//!    and the files it refers to ([`SkillFiles::instructions`]);
//! 3. **resources**, on demand: one file of the skill, read when asked for
//!    ([`SkillFiles::resource`]).
//!
//! Levels 2 and 3 are cached and re-read when the file's size or modification time
//! changes, so an edited or reinstalled skill is never served stale.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Largest resource returned as text; larger files are described, not read whole.
pub const MAX_TEXT_RESOURCE: u64 = 256 << 10;
/// Most files listed for one referenced directory.
const MAX_DIR_LISTING: usize = 100;

/// Most files [`SkillFiles::listing`] lists for one skill.
pub const MAX_FILES: usize = 1_000;

/// A file of a skill, as [`SkillFiles::listing`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    /// Its path inside the skill, with `/`.
    pub path: String,
    /// Its media type.
    pub media_type: &'static str,
    /// Its size in bytes.
    pub bytes: u64,
}

/// A heading of the instructions and the text under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Section {
    /// The heading's text.
    pub heading: String,
    /// 1 for `#`, 2 for `##`, …
    pub level: u8,
    /// The Markdown below the heading, up to the next heading.
    pub text: String,
}

/// A code block of the instructions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeBlock {
    /// The fence's language (`bash`, `python`), if any.
    pub language: Option<String>,
    /// The code.
    pub code: String,
    /// The heading of the section it is in.
    pub section: Option<String>,
}

/// A file of the skill the instructions refer to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceRef {
    /// Its path inside the skill, with `/`.
    pub path: String,
    /// Its size.
    pub bytes: u64,
    /// `text` or `binary`.
    pub kind: &'static str,
}

/// Level 2: the instructions of a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Instructions {
    /// The SKILL.md body.
    pub body: String,
    /// Its sections, in order.
    pub sections: Vec<Section>,
    /// Its code blocks, in order.
    pub code_blocks: Vec<CodeBlock>,
    /// Files of the skill it refers to (links and code spans naming an existing file or
    /// directory; a directory stands for the files in it).
    pub resources: Vec<ResourceRef>,
}

/// Level 3: one file of a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its path inside the skill.
    pub path: String,
    /// `text` or `binary`.
    pub kind: &'static str,
    /// Its media type, from its extension.
    pub media_type: &'static str,
    /// Its size.
    pub bytes: u64,
    /// SHA-256 of its contents.
    pub sha256: String,
    /// The text, for a UTF-8 file of at most [`MAX_TEXT_RESOURCE`] bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// What a cached entry was read from: when the file changes, the entry is stale.
type Stamp = (u64, Option<SystemTime>);

#[derive(Debug, Default)]
struct Cache {
    instructions: Option<(Stamp, Arc<Instructions>)>,
    resources: HashMap<PathBuf, (Stamp, Arc<Resource>)>,
}

/// The files of one skill directory, loaded level by level and cached.
#[derive(Debug)]
pub struct SkillFiles {
    dir: PathBuf,
    cache: Mutex<Cache>,
}

impl SkillFiles {
    /// The skill in `dir`. Nothing is read until asked for.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            cache: Mutex::new(Cache::default()),
        }
    }

    /// The skill's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Level 2: the SKILL.md body, parsed; read on first use and again after a change.
    pub fn instructions(&self) -> Result<Arc<Instructions>> {
        let path = self.dir.join(super::SKILL_MD);
        let now = stamp(&path)?;
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((stamp, cached)) = &cache.instructions
            && *stamp == now
        {
            return Ok(cached.clone());
        }
        let text = std::fs::read_to_string(&path).map_err(Error::io_at(&path))?;
        let doc = crate::skill::manifest::frontmatter::SkillDoc::parse(&text).map_err(|p| {
            Error::InvalidSkillStructure(format!(
                "Invalid skill structure: SKILL.md: {}",
                p.message
            ))
        })?;
        let parsed = Arc::new(self.parse(doc.body));
        cache.instructions = Some((now, parsed.clone()));
        Ok(parsed)
    }

    /// Level 3: the file at `relative` inside the skill; read when first asked for and
    /// again after a change. Paths that leave the skill (`..`, absolute, a symbolic link
    /// pointing out) are refused.
    pub fn resource(&self, relative: &str) -> Result<Arc<Resource>> {
        let clean = clean_relative(relative).ok_or_else(|| self.no_such(relative))?;
        let root = self.dir.canonicalize().map_err(Error::io_at(&self.dir))?;
        let real = root
            .join(&clean)
            .canonicalize()
            .map_err(|_| self.no_such(relative))?;
        if !real.starts_with(&root) || !real.is_file() {
            return Err(self.no_such(relative));
        }
        let now = stamp(&real)?;
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((stamp, cached)) = cache.resources.get(&clean)
            && *stamp == now
        {
            return Ok(cached.clone());
        }
        let bytes = std::fs::read(&real).map_err(Error::io_at(&real))?;
        let size = bytes.len() as u64;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        let kind = kind_of(&bytes, false);
        let text = String::from_utf8(bytes).ok().filter(|_| kind == "text");
        let resource = Arc::new(Resource {
            path: slashed(&clean),
            kind,
            media_type: media_type(&clean, kind),
            bytes: size,
            sha256,
            content: text.filter(|_| size <= MAX_TEXT_RESOURCE),
        });
        cache.resources.insert(clean, (now, resource.clone()));
        Ok(resource)
    }

    /// Every file of the skill (SKILL.md, references, scripts, assets), with its media
    /// type (from its extension) and size, sorted by path; at most `MAX_FILES`.
    pub fn listing(&self) -> Vec<Listed> {
        let mut files = walk(&self.dir, &self.dir);
        files.truncate(MAX_FILES);
        files
            .into_iter()
            .filter_map(|relative| {
                let bytes = std::fs::metadata(self.dir.join(&relative)).ok()?.len();
                let kind = if looks_binary(&self.dir.join(&relative)) {
                    "binary"
                } else {
                    "text"
                };
                Some(Listed {
                    media_type: media_type(&relative, kind),
                    path: slashed(&relative),
                    bytes,
                })
            })
            .collect()
    }

    fn no_such(&self, relative: &str) -> Error {
        let listed = self
            .instructions()
            .map(|i| {
                i.resources
                    .iter()
                    .map(|r| r.path.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        Error::InvalidInput {
            skill: self
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            reason: format!(
                "{relative:?} is not a file of this skill; give a path relative to the skill's directory{}",
                if listed.is_empty() {
                    String::new()
                } else {
                    format!(", one of: {listed}")
                }
            ),
        }
    }

    fn parse(&self, body: String) -> Instructions {
        let mut sections: Vec<Section> = Vec::new();
        let mut code_blocks = Vec::new();
        let mut mentions: Vec<String> = Vec::new();
        let mut heading: Option<(u8, String, usize)> = None;
        let mut code: Option<(Option<String>, String)> = None;
        // Where the current section's text starts, and its index.
        let mut open: Option<(usize, usize)> = None;
        for (event, range) in Parser::new(&body).into_offset_iter() {
            match event {
                Event::Start(Tag::Heading { level, .. }) => {
                    if let Some((index, from)) = open.take() {
                        sections[index].text = body[from..range.start].trim().to_owned();
                    }
                    heading = Some((level as u8, String::new(), range.end));
                }
                Event::End(TagEnd::Heading(_)) => {
                    if let Some((level, text, _)) = heading.take() {
                        sections.push(Section {
                            heading: text.trim().to_owned(),
                            level,
                            text: String::new(),
                        });
                        open = Some((sections.len() - 1, range.end));
                    }
                }
                Event::Start(Tag::CodeBlock(kind)) => {
                    let language = match kind {
                        CodeBlockKind::Fenced(info) => info
                            .split_whitespace()
                            .next()
                            .map(str::to_owned)
                            .filter(|l| !l.is_empty()),
                        CodeBlockKind::Indented => None,
                    };
                    code = Some((language, String::new()));
                }
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((language, text)) = code.take() {
                        code_blocks.push(CodeBlock {
                            language,
                            code: text,
                            section: sections.last().map(|s| s.heading.clone()),
                        });
                    }
                }
                Event::Text(text) => {
                    if let Some((_, code_text)) = &mut code {
                        code_text.push_str(&text);
                    } else if let Some((_, heading_text, _)) = &mut heading {
                        heading_text.push_str(&text);
                    }
                }
                Event::Code(text) => {
                    if let Some((_, heading_text, _)) = &mut heading {
                        heading_text.push_str(&text);
                    }
                    mentions.push(text.into_string());
                }
                Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                    mentions.push(dest_url.into_string());
                }
                _ => {}
            }
        }
        if let Some((index, from)) = open {
            sections[index].text = body[from..].trim().to_owned();
        }
        // The helper scripts of an Agent Skill are resources whether or not the
        // instructions name each one.
        mentions.push("scripts".to_owned());
        let resources = self.referenced(&mentions);
        Instructions {
            body,
            sections,
            code_blocks,
            resources,
        }
    }

    /// The files of the skill that `mentions` name, in order of first mention.
    fn referenced(&self, mentions: &[String]) -> Vec<ResourceRef> {
        let mut seen = std::collections::HashSet::new();
        let mut found = Vec::new();
        for mention in mentions {
            // A link may carry an anchor or a query; a code span may be a command line.
            let target = mention.split(['#', '?']).next().unwrap_or_default().trim();
            if target.is_empty() || target.contains("://") || target.contains(char::is_whitespace) {
                continue;
            }
            let Some(clean) = clean_relative(target) else {
                continue;
            };
            if clean.as_os_str() == super::SKILL_MD {
                continue;
            }
            let path = self.dir.join(&clean);
            let files = if path.is_dir() {
                list_files(&self.dir, &path)
            } else if path.is_file() {
                vec![clean]
            } else {
                continue;
            };
            for file in files {
                if seen.insert(file.clone())
                    && let Ok(meta) = std::fs::symlink_metadata(self.dir.join(&file))
                    && meta.is_file()
                {
                    found.push(ResourceRef {
                        kind: if looks_binary(&self.dir.join(&file)) {
                            "binary"
                        } else {
                            "text"
                        },
                        path: slashed(&file),
                        bytes: meta.len(),
                    });
                }
            }
        }
        found
    }
}

fn stamp(path: &Path) -> Result<Stamp> {
    let meta = std::fs::metadata(path).map_err(Error::io_at(path))?;
    Ok((meta.len(), meta.modified().ok()))
}

/// `path` as a relative path with no `..`, no root, and at least one part.
pub(crate) fn clean_relative(path: &str) -> Option<PathBuf> {
    let mut clean = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!clean.as_os_str().is_empty()).then_some(clean)
}

fn slashed(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// The files under `dir` (relative to `root`), sorted, at most [`MAX_DIR_LISTING`];
/// symbolic links are left out.
fn list_files(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut files = walk(root, dir);
    files.truncate(MAX_DIR_LISTING);
    files
}

/// Every regular file under `dir`, relative to `root`, sorted; symbolic links and
/// hidden files and directories (the install record, `.git`) are left out.
fn walk(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file()
                && let Ok(relative) = entry.path().strip_prefix(root)
            {
                files.push(relative.to_owned());
            }
        }
    }
    files.sort();
    files
}

/// `text` or `binary`, judged from the first 8 KiB of `path`.
fn looks_binary(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = Vec::with_capacity(8192);
    let read = std::fs::File::open(path).and_then(|f| f.take(8192).read_to_end(&mut head));
    read.is_err() || kind_of(&head, head.len() == 8192) == "binary"
}

/// `text` for UTF-8 without NUL bytes, else `binary`; a `sample` cut from a longer file
/// may end inside a multi-byte character and still be text.
fn kind_of(bytes: &[u8], sample: bool) -> &'static str {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => !text.contains('\0'),
        Err(e) => sample && e.error_len().is_none() && !bytes[..e.valid_up_to()].contains(&0),
    };
    if text { "text" } else { "binary" }
}

fn media_type(path: &Path, kind: &str) -> &'static str {
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "md" | "markdown" => "text/markdown",
        "json" => "application/json",
        "js" | "mjs" => "text/javascript",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "yaml" | "yml" => "application/yaml",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        _ if kind == "text" => "text/plain",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_and_reading_agree_on_text_and_binary() {
        assert_eq!(kind_of("résumé".as_bytes(), false), "text");
        assert_eq!(
            kind_of(b"a\0b", false),
            "binary",
            "UTF-8 with NUL is binary"
        );
        let cut = &"é".as_bytes()[..1];
        assert_eq!(kind_of(cut, true), "text", "a sample may end mid-character");
        assert_eq!(kind_of(cut, false), "binary", "a whole file may not");
    }

    #[test]
    fn sections_code_blocks_and_references_are_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("fonts")).unwrap();
        std::fs::write(dir.path().join("reference.md"), "# Ref\n").unwrap();
        std::fs::write(dir.path().join("fonts/Sans.ttf"), [0_u8, 1, 0, 0, 0xff]).unwrap();
        std::fs::write(
            dir.path().join("SKILL.md"),
            "---\nname: x\ndescription: d\n---\nIntro.\n\n# Use\nRead [the reference](reference.md#top) and `fonts/`.\n\n```bash\nrun it\n```\n\n## `missing.md` is not here\nSee `missing.md`, <https://example.com>.\n",
        )
        .unwrap();
        let files = SkillFiles::new(dir.path());
        let parsed = files.instructions().unwrap();
        let headings: Vec<(&str, u8)> = parsed
            .sections
            .iter()
            .map(|s| (s.heading.as_str(), s.level))
            .collect();
        assert_eq!(headings, [("Use", 1), ("missing.md is not here", 2)]);
        assert!(parsed.sections[0].text.starts_with("Read [the reference]"));
        assert!(parsed.sections[0].text.ends_with("```"));
        assert_eq!(
            parsed.code_blocks,
            [CodeBlock {
                language: Some("bash".into()),
                code: "run it\n".into(),
                section: Some("Use".into()),
            }]
        );
        let refs: Vec<(&str, &str)> = parsed
            .resources
            .iter()
            .map(|r| (r.path.as_str(), r.kind))
            .collect();
        assert_eq!(
            refs,
            [("reference.md", "text"), ("fonts/Sans.ttf", "binary")]
        );
    }
}
