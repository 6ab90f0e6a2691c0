//! The stop signals a command was started with ignored. `nohup` ignores SIGHUP, and a
//! non-interactive shell's `command &` ignores SIGINT: a handler installed over such an ignore
//! would undo it (a nohup'd sweep would die with the terminal), so those signals stay ignored.

/// Whether `signal` is ignored now — before simbench installs a handler for it, the
/// disposition the process inherited. Read from Linux's `/proc/self/status`; elsewhere, no.
pub(crate) fn ignored(signal: i32) -> bool {
    let mask = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| ignored_mask(&status));
    mask.is_some_and(|m| (1..=64).contains(&signal) && m >> (signal - 1) & 1 == 1)
}

/// The `SigIgn` mask of a `/proc/PID/status` text: bit n − 1 for signal n.
fn ignored_mask(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_has_a_bit_per_signal() {
        // nohup'd under a non-interactive shell: SIGHUP (1), SIGINT (2), SIGQUIT (3), and
        // SIGPIPE (13), which Rust's runtime ignores in every program.
        let status = "Name:\tsimbench\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000001007\n";
        let mask = ignored_mask(status).unwrap();
        assert_eq!(mask, 0x1007);
        assert_eq!(ignored_mask("Name:\tx\n"), None);
        // The program's own: Rust ignores SIGPIPE; a test harness leaves SIGTERM alone.
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(ignored(13));
            assert!(!ignored(15));
            assert!(!ignored(0) && !ignored(65));
        }
    }
}
