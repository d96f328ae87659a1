//! Output folders: no two outputs of a pipeline write into the same folder, or one inside another.
//!
//! The folders are the `path` of every files sink (`sink`, `late_sink`, `dead_letter`) and
//! `checkpoint.path`. Two files sinks in one folder both write `batch-NNNNNN.jsonl` (and each
//! removes the other's uncommitted temporary files at start); the checkpoint store removes every
//! hidden `.tmp` file of its folder, the files sinks' uncommitted batches included, and
//! `checkpoint.path` holds one sub-folder per pipeline name, so a sink folder inside it can be
//! another pipeline's checkpoint folder. A folder inside another output's folder is refused too:
//! a reader of the outer folder (Spark's file source lists it recursively) would find the
//! inner output's files in it. A sink may not write into the folder a files source or a table
//! reads either (it would read the sink's batches back as input).
//!
//! Paths are compared as resolved: relative paths joined to the pipeline file's folder when it is
//! known, then walked as the kernel walks it: every symbolic link followed, also a link to a
//! folder that does not exist yet (the output's files will land in its target), `..` taken back
//! on the path reached so far, and the part that does not exist yet resolved as text (`out`,
//! `./out/` and `x/../out` are one folder; so are `out` and a link to it, existing or not). A
//! relative path whose base is unknown is resolved as text only.

use std::path::{Component, Path, PathBuf};

use super::error::{SpecError, quote};
use super::{Pipeline, SinkSpec, SourceKind};

const ALLOWED: &str = "a folder of its own: each files sink and the checkpoint write into their own folder, not \
                       the same as another output's, nor inside it, nor holding it";

/// One output folder: its field, the path as written, the path compared.
struct Folder<'a> {
    field: &'static str,
    written: &'a Path,
    compared: PathBuf,
}

/// Refuses two output folders that are one and the same, or one inside the other, at the later
/// field in file order (`sink.path`, `late_sink.path`, `dead_letter.path`, `checkpoint.path`),
/// naming the earlier one. `base`: the folder relative paths are resolved against (the pipeline
/// file's, made absolute); without it a relative path is compared with relative paths only.
///
/// # Errors
/// A [`SpecError`] at the later field's `path`, e.g. `dead_letter.path: given "out" (the same
/// folder as sink.path "out"); allowed: a folder of its own: ...`.
pub(crate) fn check_output_folders(pipeline: &Pipeline, base: Option<&Path>) -> Result<(), SpecError> {
    let sinks = [
        ("sink.path", Some(&pipeline.sink)),
        ("late_sink.path", pipeline.late_sink.as_ref()),
        ("dead_letter.path", pipeline.dead_letter.as_ref()),
    ];
    let folders: Vec<Folder<'_>> = sinks
        .into_iter()
        .filter_map(|(field, sink)| match sink {
            Some(SinkSpec::Files { path } | SinkSpec::Delta { path, .. }) => Some((field, path.as_path())),
            _ => None,
        })
        .chain(pipeline.checkpoint.as_ref().map(|c| ("checkpoint.path", c.path.as_path())))
        .map(|(field, written)| Folder { field, written, compared: resolved(&resolve(written, base)) })
        .collect();
    for (j, later) in folders.iter().enumerate() {
        for earlier in &folders[..j] {
            if later.compared.is_absolute() != earlier.compared.is_absolute() {
                continue; // one relative to an unknown folder: nothing to compare
            }
            let relation = if later.compared == earlier.compared {
                "the same folder as"
            } else if later.compared.starts_with(&earlier.compared) {
                "inside"
            } else if earlier.compared.starts_with(&later.compared) {
                "holds"
            } else {
                continue;
            };
            return Err(SpecError::new(
                later.field,
                format!(
                    "{} ({relation} {} {})",
                    quote(&later.written.display().to_string()),
                    earlier.field,
                    quote(&earlier.written.display().to_string())
                ),
                ALLOWED,
            ));
        }
    }
    check_input_folders(pipeline, base, &folders)
}

/// Refuses a sink whose folder is one a files source or a table reads: the source would read
/// the sink's committed batches as new input, batch after batch (a finite run never ends), and
/// a table would change with every batch. A sink folder inside or around an input folder is
/// fine: neither lists sub-folders.
fn check_input_folders(pipeline: &Pipeline, base: Option<&Path>, outputs: &[Folder<'_>]) -> Result<(), SpecError> {
    let several = !pipeline.more_sources.is_empty();
    let sources = std::iter::once(&pipeline.source).chain(pipeline.more_sources.iter().map(|u| &u.source));
    let inputs = sources
        .enumerate()
        .filter_map(|(i, source)| match &source.kind {
            SourceKind::Files { path, .. } => {
                Some((if several { format!("source[{i}].path") } else { "source.path".to_string() }, path))
            }
            _ => None,
        })
        .chain(pipeline.tables.iter().enumerate().map(|(i, t)| (format!("table[{i}].path"), &t.path)));
    for (field, written) in inputs {
        let compared = resolved(&resolve(written, base));
        let sink = outputs.iter().find(|o| o.field != "checkpoint.path" && o.compared == compared);
        if let Some(sink) = sink {
            return Err(SpecError::new(
                sink.field,
                format!(
                    "{} (the folder {field} {} reads: the sink's output would be read back as input)",
                    quote(&sink.written.display().to_string()),
                    quote(&written.display().to_string())
                ),
                "a folder that no source or table reads",
            ));
        }
    }
    Ok(())
}

/// `path` joined to `base` when relative and `base` is known (an object-store URL is left as it
/// is: it is compared with the other URLs only, as text).
fn resolve(path: &Path, base: Option<&Path>) -> PathBuf {
    match base {
        Some(base) if path.is_relative() && super::url_scheme(path).is_none() => base.join(path),
        _ => path.to_path_buf(),
    }
}

/// `path` as the file system reaches it: an absolute path walked component by component, every
/// symbolic link followed (also one whose target does not exist yet: the target is where the
/// output's files will go), `..` taken back on the path reached so far, as the kernel does; a
/// relative path with [`lexical`] only. A component that does not exist, or that cannot be
/// inspected (no permission), is taken as text, as a folder that does not exist yet is. More than
/// [`MAX_LINKS`] links (a loop) leave the rest of the path as text.
fn resolved(path: &Path) -> PathBuf {
    if path.is_relative() {
        return lexical(path);
    }
    let mut reached = PathBuf::new();
    // The components still to walk, last first (a link's target is pushed in front of them).
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    push_components(&mut rest, path);
    let mut links = 0;
    while let Some(c) = rest.pop() {
        let c = Path::new(&c);
        match c.components().next() {
            Some(Component::RootDir | Component::Prefix(_)) => reached = c.to_path_buf(),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                reached.pop();
            }
            Some(Component::Normal(name)) => {
                let next = reached.join(name);
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() && links < MAX_LINKS => {
                        links += 1;
                        match std::fs::read_link(&next) {
                            // An absolute target starts from the root; a relative one from the
                            // link's folder (`reached`).
                            Ok(target) => push_components(&mut rest, &target),
                            Err(_) => reached = next,
                        }
                    }
                    _ => reached = next,
                }
            }
        }
    }
    lexical(&reached)
}

/// Most symbolic links [`resolved`] follows in one path (Linux's own bound is 40).
const MAX_LINKS: usize = 40;

/// Pushes `path`'s components onto `stack` so that its first component is popped first.
fn push_components(stack: &mut Vec<std::ffi::OsString>, path: &Path) {
    let at = stack.len();
    stack.extend(path.components().map(|c| c.as_os_str().to_os_string()));
    stack[at..].reverse();
}

/// `path` with `.` dropped and `..` taken back where it can be (`a/./b/../c` is `a/c`; `/..` is
/// `/`; a leading `..` of a relative path stays). Empty for `.`.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_resolves_dots_and_separators() {
        for (given, want) in [
            ("out", "out"),
            ("./out/", "out"),
            ("x/../out", "out"),
            ("a//b/./c/..", "a/b"),
            (".", ""),
            ("../out", "../out"),
            ("../../x/..", "../.."),
            ("/abs//out/.", "/abs/out"),
            ("/..", "/"),
        ] {
            assert_eq!(lexical(Path::new(given)), PathBuf::from(want), "{given}");
        }
    }

    #[test]
    fn nesting_is_by_component_not_by_prefix() {
        assert!(!lexical(Path::new("out/rows-dead")).starts_with(lexical(Path::new("out/rows"))));
        assert!(lexical(Path::new("out/rows/dead")).starts_with(lexical(Path::new("./out/rows/"))));
    }

    /// A pipeline over `dir` whose sink writes into `sink` and dead letters into `dead_letter`
    /// (absolute paths).
    fn pipeline_text(sink: &Path, dead_letter: &Path) -> String {
        format!(
            r#"
name = "links"
mode = "micro-batch"
[source]
type = "files"
path = "in"
schema = "k STRING, ts TIMESTAMP"
[query]
type = "deduplicate"
[sink]
type = "files"
path = "{}"
[dead_letter]
type = "files"
path = "{}"
"#,
            sink.display(),
            dead_letter.display()
        )
    }

    #[test]
    fn a_sink_in_the_folder_the_source_reads_is_refused() {
        // the files source would read each committed batch back as input: a run without end
        let e = crate::spec::parse_pipeline_str(&pipeline_text(Path::new("./in/"), Path::new("dead"))).unwrap_err();
        assert_eq!(e.field, "sink.path", "{e}");
        assert!(e.given.contains("the folder source.path \"in\" reads"), "{e}");
        let e = crate::spec::parse_pipeline_str(&pipeline_text(Path::new("out"), Path::new("x/../in"))).unwrap_err();
        assert_eq!(e.field, "dead_letter.path", "{e}");
        // the source does not list sub-folders: one inside its folder is fine
        assert!(crate::spec::parse_pipeline_str(&pipeline_text(Path::new("in/out"), Path::new("dead"))).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_to_another_outputs_folder_is_the_same_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let link = tmp.path().join("link-to-out");
        std::os::unix::fs::symlink(&out, &link).unwrap();

        // The link itself: one folder under two names.
        let e = crate::spec::parse_pipeline_str(&pipeline_text(&out, &link)).unwrap_err();
        assert_eq!(e.field, "dead_letter.path", "{e}");
        assert!(e.given.contains("the same folder as sink.path"), "{e}");
        // A folder not created yet under the link: inside the sink's folder.
        let e = crate::spec::parse_pipeline_str(&pipeline_text(&out, &link.join("dead/./letters"))).unwrap_err();
        assert!(e.given.contains("inside sink.path"), "{e}");
        // The sink in a folder under the link, the dead letters in the link's target: it holds it.
        let e = crate::spec::parse_pipeline_str(&pipeline_text(&link.join("rows"), &out)).unwrap_err();
        assert!(e.given.contains("holds sink.path"), "{e}");
        // A sibling of the link's target is a folder of its own.
        let elsewhere = tmp.path().join("elsewhere");
        assert!(crate::spec::parse_pipeline_str(&pipeline_text(&link, &elsewhere)).is_ok());
    }

    #[test]
    fn a_symbolic_link_to_a_folder_not_created_yet_is_that_folder() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("real")).unwrap();
        // Dangling until the first write creates `real/out2`: its files land in the sink's folder.
        let absolute = tmp.path().join("abs-link");
        std::os::unix::fs::symlink(tmp.path().join("real/out2"), &absolute).unwrap();
        let e = crate::spec::parse_pipeline_str(&pipeline_text(&tmp.path().join("real/out2"), &absolute)).unwrap_err();
        assert_eq!(e.field, "dead_letter.path", "{e}");
        assert!(e.given.contains("the same folder as sink.path"), "{e}");
        // A relative target is taken from the link's folder; `..` after a link leaves its target.
        let relative = tmp.path().join("rel-link");
        std::os::unix::fs::symlink("real/./out3", &relative).unwrap();
        let e =
            crate::spec::parse_pipeline_str(&pipeline_text(&tmp.path().join("real/out3/rows"), &relative)).unwrap_err();
        assert!(e.given.contains("holds sink.path"), "{e}");
        let up = relative.join("../elsewhere");
        assert_eq!(resolved(&up), resolved(&tmp.path().join("real/elsewhere")));
        // A loop of links ends the walk without hanging; the rest is compared as text.
        let a = tmp.path().join("loop-a");
        let b = tmp.path().join("loop-b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        assert!(crate::spec::parse_pipeline_str(&pipeline_text(&a.join("x"), &tmp.path().join("real/y"))).is_ok());
    }
}
