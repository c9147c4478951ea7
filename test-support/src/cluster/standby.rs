//! Hot standbys of a disposable cluster, for failover and replica tests: a base backup streaming from its
//! primary, promoted when the primary is lost.

use super::{checked, Cluster, ClusterSpec, DEADLINE};

impl Cluster {
    /// Starts a hot standby of `primary` at `spec`: a base backup of it (`pg_basebackup -R`, which writes the
    /// standby signal and the streaming-replication connection), then the server, which replays the primary's
    /// WAL as it streams. The spec's settings apply; its `hba` and `files` are the primary's, copied. A
    /// standby is never reused.
    ///
    /// With `synchronous_standby_names = '*'` among the primary's settings, the primary acknowledges a commit
    /// only once this standby has flushed it.
    pub fn start_standby(spec: ClusterSpec, primary: &Cluster) -> Result<Cluster, String> {
        if spec.reuse {
            return Err("a standby is made fresh from its primary, never reused".to_owned());
        }
        Cluster::start_from(spec, Some(primary.spec.port))
    }

    /// A base backup of the primary on 127.0.0.1 at `port` into `<dir>/data`, as a standby of it.
    pub(super) fn copy_primary(&mut self, port: u16) -> Result<(), String> {
        self.secure_dir()?;
        let output = self
            .server_program("pg_basebackup")
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
            .arg("-D")
            .arg(self.data())
            .args(["-R", "-X", "stream", "-c", "fast", "-w"])
            .output()
            .map_err(|e| format!("starting pg_basebackup: {e}"))?;
        checked(&output, "pg_basebackup")?;
        self.write_marker()
    }

    /// Promotes a standby to a primary (`pg_ctl promote`) and blocks until it accepts writes.
    pub fn promote(&mut self) -> Result<(), String> {
        let output = self
            .server_program("pg_ctl")
            .arg("promote")
            .arg("-D")
            .arg(self.data())
            .args(["-w", "-s", "-t", &DEADLINE.as_secs().to_string()])
            .output()
            .map_err(|e| format!("starting pg_ctl: {e}"))?;
        checked(&output, "pg_ctl promote")
    }
}
