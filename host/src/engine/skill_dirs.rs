//! Which directories under a skills directory are skills: category folders searched to
//! a depth bound, links out of the tree not entered; and going through them all at
//! start-up, on every worker thread ([`for_each_dir`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::skill::manifest::package::{PROMPT_MD, SKILL_JSON, SKILL_MD, SKILL_WASM};

/// How many folders below a skills directory a skill may be: `summarize/` is one,
/// `text/summarize/` two, `text/short/summarize/` three. A folder at the last level is
/// taken as a skill (and reported if it is none).
pub const MAX_CATEGORY_DEPTH: usize = 3;

/// The files that make a directory a skill rather than a folder of skills; the
/// component first, as most skills of a large catalogue are Wasm ones (each file looked
/// for before the one found is a `stat` more per skill at every start).
const SKILL_FILES: [&str; 4] = [SKILL_WASM, SKILL_MD, SKILL_JSON, PROMPT_MD];

/// The skill directories under `root`, sorted. A directory whose name starts with a dot
/// is left out (staging and trash directories do). A directory holding none of a
/// skill's files (`SKILL.md`, `skill.json`, `skill.wasm`, `prompt.md`) is a category
/// folder, searched in turn up to [`MAX_CATEGORY_DEPTH`] levels; one with no skill
/// anywhere under it is returned as it is (its load then says what it lacks). A
/// category folder is entered only when its real path is inside `root`'s: a link out of
/// the tree is not followed (a link to a skill directory is loaded, as at the top).
pub fn skill_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    let real_root = root.canonicalize().map_err(Error::io_at(root))?;
    let mut dirs = Vec::new();
    collect_skill_dirs(root, &real_root, 0, &mut dirs)?;
    dirs.sort();
    Ok(dirs)
}

/// The folders in `dir` (or links to folders) whose names do not start with a dot,
/// sorted.
fn subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(Error::io_at(dir))?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| {
            // The entry's type comes with the listing; only a link (or a file system
            // that does not say) costs a `stat` to know whether it leads to a directory.
            match e.file_type() {
                Ok(t) if t.is_dir() => true,
                Ok(t) if t.is_file() => false,
                _ => e.path().is_dir(),
            }
        })
        .map(|e| e.path())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Adds the skill directories under `dir` to `found`; whether any is worth keeping: a
/// skill, or a folder at the depth bound (added for its load to say what it lacks).
fn collect_skill_dirs(
    dir: &Path,
    real_root: &Path,
    depth: usize,
    found: &mut Vec<PathBuf>,
) -> Result<bool> {
    let mut any = false;
    for path in subdirs(dir)? {
        any |= classify(path, real_root, depth, found)?;
    }
    Ok(any)
}

/// Adds the folder `path`, `depth` folders below the skills directory, to `found` if it
/// is a skill, or else the skill directories under it; whether any is worth keeping.
fn classify(
    path: PathBuf,
    real_root: &Path,
    depth: usize,
    found: &mut Vec<PathBuf>,
) -> Result<bool> {
    if SKILL_FILES.iter().any(|file| path.join(file).is_file()) {
        found.push(path);
        return Ok(true);
    }
    let inside = path
        .canonicalize()
        .is_ok_and(|real| real.starts_with(real_root) && real != real_root);
    let mut beneath = Vec::new();
    if !inside {
        found.push(path);
        Ok(false)
    } else if depth + 1 >= MAX_CATEGORY_DEPTH {
        found.push(path);
        Ok(true)
    } else if collect_skill_dirs(&path, real_root, depth + 1, &mut beneath)? {
        found.extend(beneath);
        Ok(true)
    } else {
        found.push(path);
        Ok(false)
    }
}

/// `each(loader, dir)` for every skill directory under `root` ([`skill_dirs`]), in
/// name order, each given its own handle on `loader`. The directories are independent,
/// so they are shared out among the runtime's worker threads in runs of at least
/// [`DIRS_PER_TASK`] folders of `root`, each run also finding which of its folders are
/// skills and which hold skills: a host with 1,000 skills starts on every core (on a
/// current-thread runtime, one after another).
pub(crate) async fn for_each_dir<L, T, F, Fut>(
    loader: &L,
    root: &Path,
    each: F,
) -> Result<Vec<(PathBuf, T)>>
where
    L: Clone + Send + Sync + 'static,
    T: Send + 'static,
    F: Fn(Arc<L>, PathBuf) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = T> + Send,
{
    let real_root: Arc<Path> = root.canonicalize().map_err(Error::io_at(root))?.into();
    let folders = subdirs(root)?;
    let loader = Arc::new(loader.clone());
    // Tasks of their own only on a Tokio runtime (an embedder may poll this elsewhere).
    let threads = match tokio::runtime::Handle::try_current() {
        Ok(_) => std::thread::available_parallelism().map_or(1, usize::from),
        Err(_) => 1,
    };
    let tasks = threads.min(folders.len() / DIRS_PER_TASK).max(1);
    let run = |folders: Vec<PathBuf>| {
        let (loader, each, real_root) = (Arc::clone(&loader), each.clone(), Arc::clone(&real_root));
        async move {
            let mut done = Vec::with_capacity(folders.len());
            for folder in folders {
                let mut dirs = Vec::new();
                classify(folder, &real_root, 0, &mut dirs)?;
                for dir in dirs {
                    let value = each(Arc::clone(&loader), dir.clone()).await;
                    done.push((dir, value));
                }
            }
            Ok::<_, Error>(done)
        }
    };
    let share = folders.len().div_ceil(tasks);
    let mut runs = folders.chunks(share.max(1)).map(<[PathBuf]>::to_vec);
    let first = runs.next().unwrap_or_default();
    let others: Vec<_> = runs.map(|folders| tokio::spawn(run(folders))).collect();
    let mut loaded = run(first).await?;
    for other in others {
        match other.await {
            Ok(done) => loaded.extend(done?),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => return Err(Error::Engine(format!("loading skills stopped: {e}"))),
        }
    }
    // In the order of `skill_dirs`: folders in name order, and what each holds after it.
    loaded.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(loaded)
}

/// The fewest skill directories worth a task of their own when loading many.
const DIRS_PER_TASK: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    /// A skills directory of `n` skills, with categories among them, a hidden folder and
    /// a folder that holds nothing.
    fn tree(n: usize) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let skill = |dir: PathBuf| {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(SKILL_MD), "---\nname: s\n---\n").unwrap();
        };
        for i in 0..n {
            match i % 10 {
                // A category of two, and one of a category of a category.
                3 => {
                    skill(root.path().join(format!("s{i:03}/b")));
                    skill(root.path().join(format!("s{i:03}/a")));
                }
                7 => skill(root.path().join(format!("s{i:03}-x/deeper/c"))),
                _ => skill(root.path().join(format!("s{i:03}"))),
            }
        }
        skill(root.path().join(".staging"));
        std::fs::create_dir(root.path().join("empty")).unwrap();
        root
    }

    #[test]
    fn each_skill_directory_is_visited_once_in_the_order_skill_dirs_gives() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        for n in [0, 5, 3 * DIRS_PER_TASK + 5] {
            let root = tree(n);
            let expected = skill_dirs(root.path()).unwrap();
            assert!(expected.iter().any(|d| d.ends_with("empty")));
            assert!(!expected.iter().any(|d| d.ends_with(".staging")));
            let visited = rt
                .block_on(for_each_dir(&(), root.path(), |_, dir| async move {
                    dir.file_name().map(|n| n.to_owned())
                }))
                .unwrap();
            let dirs: Vec<PathBuf> = visited.iter().map(|(d, _)| d.clone()).collect();
            assert_eq!(dirs, expected, "{n} skills");
            assert!(
                visited
                    .iter()
                    .all(|(d, name)| d.file_name() == name.as_deref())
            );
            // Without a runtime: one after another, the same.
            let alone =
                futures::executor::block_on(for_each_dir(&(), root.path(), |_, _| async {}))
                    .unwrap();
            assert_eq!(
                alone.into_iter().map(|(d, _)| d).collect::<Vec<_>>(),
                expected
            );
        }
    }
}
