//! A directory in the system's temporary space that a command builds in, removed when dropped (on every path,
//! failures included).

use std::ops::Deref;
use std::path::{Path, PathBuf};

/// `<tmp>/janitor-<name>-<pid>`, empty when made.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// A fresh, empty directory for `name`; one left by an earlier run of this process id is removed first.
    pub fn new(name: &str) -> Result<ScratchDir, String> {
        let dir = std::env::temp_dir().join(format!("janitor-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(ScratchDir(dir))
    }
}

impl Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
