//! Command-line arguments.

use clap::{Args, Parser};
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  zarrfs data/climate.zarr /mnt/climate          mount a directory store (returns once mounted)
  zarrfs -f -v archive.zip /mnt/a                 stay in the foreground, log at info level
  zarrfs --cache-size 4G -o allow_other s.zarr m  bigger chunk cache, let other users in
  zarrfs unmount /mnt/climate                     unmount (umount and fusermount3 -u work too)
  zarrfs --anonymous s3://bucket/data.zarr /mnt/d  a public S3 bucket (unsigned requests)
  zarrfs s3://b/x.zarr m --endpoint http://127.0.0.1:9000
                                                  MinIO, Ceph or s3s (credentials from AWS_*)
  zarrfs https://host/data/x.zarr /mnt/x          plain HTTPS (consolidated metadata or NCZarr)
  zarrfs refs.json /mnt/r --allow-target s3://noaa  kerchunk references, targets in a bucket
  zarrfs --ref v1.0 s3://b/repo /mnt/v1            an Icechunk repository at tag v1.0
  zarrfs --cache-dir /var/cache/z s.zarr /mnt/s   keep decoded arrays on disk across mounts
  mount -t fuse.zarrfs -o cache_size=2G s.zarr /mnt/s
                                                  through mount(8); every option works as -o
  /etc/fstab: /data/s.zarr /mnt/s fuse.zarrfs ro,cache_size=2G,nofail 0 0

Remote stores: s3://bucket/prefix, gs://bucket/prefix, az://container/prefix (abfs:// too),
http(s)://host/path, and netCDF URLs (https://host/bucket/key#mode=nczarr,s3). Credentials come
from the providers' usual variables and files: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL, AWS_PROFILE (keys in ~/.aws/credentials);
GOOGLE_APPLICATION_CREDENTIALS (or gcloud's application default credentials);
AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY. The root group and its children are read at mount
time (consolidated metadata first, read once); every other group when it is first listed or
looked up (and a few ahead of a walk, unless --no-look-ahead), then answered from memory. Chunks
are fetched by byte range. Failed requests are retried, then the read fails with EIO and a log
line.

In the mount: a group is a directory with .group.json; an array A is three files:
A (elements in C order, little-endian), A.json (metadata) and A.npy (for numpy.load).";

/// `zarrfs [OPTIONS] STORE MOUNTPOINT`
#[derive(Parser, Debug)]
#[command(
    name = "zarrfs",
    version,
    about = "Mount a Zarr hierarchy read-only: groups as directories, arrays as plain files",
    long_about = "Mounts the Zarr hierarchy STORE (a directory, a .zip file or a remote store) \
                  read-only on MOUNTPOINT with FUSE: each group is a directory, each array a \
                  plain file of its elements beside its metadata and an NPY file. zarrfs returns \
                  once the mount answers; its daemon serves it until unmounted (zarrfs unmount, \
                  umount, or a signal).",
    override_usage = "zarrfs [OPTIONS] STORE MOUNTPOINT\n       \
                      mount -t fuse.zarrfs [-o OPT[,OPT...]] STORE MOUNTPOINT\n       \
                      zarrfs unmount MOUNTPOINT\n       \
                      zarrfs --generate man|bash|zsh|fish",
    after_help = EXAMPLES,
    // As mount(8) appends the command line's -o list to the fstab line's options, the later of
    // two values wins (options that take a list, such as -o and --allow-target, accumulate).
    args_override_self = true
)]
pub struct MountArgs {
    /// The store: a directory (Zarr v2/v3), a .zip file, or a URL (s3://, gs://, az://, abfs://,
    /// http(s)://, file://).
    #[arg(value_name = "STORE", required_unless_present = "generate")]
    pub store: Option<String>,
    /// The directory to mount on (created if missing and its parent exists).
    #[arg(value_name = "MOUNTPOINT", required_unless_present = "generate")]
    pub mountpoint: Option<PathBuf>,
    #[command(flatten)]
    pub options: Options,
    /// Print the manual page (man) or a shell's completions (bash, zsh, fish) and exit.
    #[arg(long, value_name = "WHAT", exclusive = true)]
    pub generate: Option<Generated>,
}

/// What `--generate` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generated {
    /// The manual page zarrfs.1 (roff).
    Man,
    /// Completions for bash.
    Bash,
    /// Completions for zsh.
    Zsh,
    /// Completions for fish.
    Fish,
}

/// Options of the mount command.
#[derive(Args, Debug, Clone)]
pub struct Options {
    /// Stay in the foreground and log to stderr; SIGINT, SIGTERM and SIGHUP unmount cleanly.
    #[arg(short = 'f', long)]
    pub foreground: bool,
    /// Mount options, comma separated, as mount(8) and /etc/fstab pass them: every option of this
    /// list by its long name (cache_size=2G, cache_dir=DIR, anonymous, endpoint=URL, ...), FUSE's
    /// (allow_other, allow_root, default_permissions, auto_unmount, fsname=, subtype=, max_read=)
    /// and mount(8)'s (ro, nodev, nosuid, noexec, noatime, _netdev, nofail, x-systemd.*, ...).
    /// `rw` mounts read-only with a notice.
    #[arg(short = 'o', value_name = "OPT[,OPT...]")]
    pub mount_options: Vec<String>,
    /// Byte budget of the decoded-chunk cache (e.g. 512M, 2G); more than 0.
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = super::size::parse_cache_size)]
    pub cache_size: u64,
    /// Keep decoded arrays in DIR across mounts and serve complete ones with FUSE passthrough.
    /// Off by default; not with --default-cache-dir.
    #[arg(long, value_name = "DIR", conflicts_with = "default_cache_dir")]
    pub cache_dir: Option<PathBuf>,
    /// --cache-dir in the usual place: $XDG_CACHE_HOME/zarrfs or ~/.cache/zarrfs;
    /// /var/cache/zarrfs for root.
    #[arg(long)]
    pub default_cache_dir: bool,
    /// Most bytes --cache-dir keeps; whole arrays are evicted, least recently opened first
    /// [default: 10% of the free space where DIR is].
    #[arg(long, value_name = "SIZE", value_parser = super::size::parse_size)]
    pub cache_dir_size: Option<u64>,
    /// Kernel readahead of the mount (the mount's read_ahead_kb, whole pages): large for fast
    /// sequential reads; 128K suits random access through mmap better. At least 4K. Set only by
    /// root where /sys is writable [default: 1M].
    #[arg(long, value_name = "SIZE", value_parser = super::size::parse_read_ahead)]
    pub read_ahead: Option<u64>,
    /// Threads answering kernel requests [default: twice the number of cores, at least 4].
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Ignore consolidated metadata (.zmetadata, consolidated_metadata) and read every node's own
    /// metadata.
    #[arg(long)]
    pub no_consolidated: bool,
    /// Do not show A.png pictures of arrays.
    #[arg(long)]
    pub no_previews: bool,
    /// Load a group only when it is listed or looked up, not the few groups a walk (find,
    /// ls -R) visits next, ahead of it.
    #[arg(long)]
    pub no_look_ahead: bool,
    /// S3-compatible server to use instead of AWS (MinIO, Ceph, s3s), path-style; http:// is
    /// allowed. Also an Azure endpoint (Azurite) for az://, and a GCS one (fake-gcs-server) for
    /// gs://. [default: AWS_ENDPOINT_URL]
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// S3 region [default: AWS_REGION or AWS_DEFAULT_REGION, else us-east-1].
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// Send unsigned requests (public buckets and containers): no credentials are looked for.
    #[arg(long)]
    pub anonymous: bool,
    /// Remote stores: the longest one request may take, retries included (up to 4 retries with
    /// back-off; an attempt that receives nothing for a third of it is retried; 3 s to
    /// connect); then the read fails with EIO. Also the longest a file operation (lookup,
    /// stat, ls, open, read, df) waits for its answer before it gets EIO. From 1 to 604800 (a
    /// week).
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub timeout: u64,
    /// Icechunk repositories: the version to mount, a branch, a tag or a snapshot id
    /// [default: the tip of branch main].
    #[arg(long = "ref", value_name = "NAME")]
    pub reference: Option<String>,
    /// Reference sets and Icechunk repositories: also read the files they point to below PREFIX
    /// (a directory, or a URL prefix such as s3://bucket/data); repeatable. Files beside the
    /// references (same directory tree, bucket or host) are always read.
    #[arg(long, value_name = "PREFIX")]
    pub allow_target: Vec<String>,
    /// Where a daemonized zarrfs writes its log [default: syslog; where nothing listens on
    /// /dev/log, MAJOR:MINOR.log in the directory of pid files, which zarrfs names at mount].
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// More logging: -v info, -vv debug, -vvv trace (RUST_LOG overrides).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// The mount's kernel readahead when `--read-ahead` is not given.
pub const DEFAULT_READ_AHEAD: u64 = 1 << 20;

impl Options {
    /// The cache directory asked for: `--cache-dir DIR`, or the default one.
    pub fn cache_dir(&self) -> Option<PathBuf> {
        match self.default_cache_dir {
            true => Some(crate::backing::default_dir()),
            false => self.cache_dir.clone(),
        }
    }
}

impl Options {
    /// A line for each option given that does not apply to this mount (`remote`: the store's
    /// bytes come over the network), naming it: ignored, rather than refused, so that one
    /// fstab line can serve stores of either kind.
    pub fn not_applying(&self, remote: bool) -> Vec<String> {
        let local = "the store is read from local files";
        let unused = [
            (
                self.cache_dir_size.is_some() && self.cache_dir().is_none(),
                "--cache-dir-size",
                "there is no --cache-dir",
            ),
            (
                self.log_file.is_some() && self.foreground,
                "--log-file",
                "in the foreground (-f) the log goes to stderr",
            ),
            (self.endpoint.is_some() && !remote, "--endpoint", local),
            (self.region.is_some() && !remote, "--region", local),
            (self.anonymous && !remote, "--anonymous", local),
        ];
        unused
            .into_iter()
            .filter(|&(given, _, _)| given)
            .map(|(_, option, why)| format!("option {option} does not apply ({why}): ignored"))
            .collect()
    }
}

/// Parses `--threads`: a mount with no thread would never answer.
fn parse_threads(text: &str) -> Result<usize, super::error::OptionError> {
    match text.parse() {
        Ok(0) => Err(super::error::OptionError::NoThreads),
        Ok(n) => Ok(n),
        Err(_) => Err(super::error::OptionError::Threads(text.to_string())),
    }
}

/// `zarrfs unmount MOUNTPOINT`
#[derive(Parser, Debug)]
#[command(name = "zarrfs unmount", about = "Unmount a zarrfs mount", version)]
pub struct UnmountArgs {
    /// The mount point to unmount.
    #[arg(value_name = "MOUNTPOINT")]
    pub mountpoint: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::MountArgs;
    use clap::Parser;

    #[test]
    fn options_that_do_not_apply_are_named_one_line_each() {
        let unused = |args: &[&str], remote: bool| {
            let argv = ["zarrfs"].iter().chain(args).chain(&["s", "m"]);
            MountArgs::parse_from(argv).options.not_applying(remote)
        };
        let all = [
            "-f",
            "--cache-dir-size=1G",
            "--log-file=l",
            "--endpoint=http://h",
            "--region=r",
            "--anonymous",
        ];
        let said = unused(&all, false);
        assert_eq!(said.len(), 5, "{said:?}");
        for (line, option) in said.iter().zip(&all[1..]) {
            let name = option.split('=').next().unwrap();
            assert!(
                line.starts_with(&format!("option {name} does not apply")),
                "{line}"
            );
        }
        // A remote store takes the remote options; a cache directory takes its size; a
        // daemon takes its log file.
        assert_eq!(unused(&all, true).len(), 2);
        assert!(unused(&["--cache-dir-size=1G", "--cache-dir=d"], false).is_empty());
        assert!(unused(&["--cache-dir-size=1G", "--default-cache-dir"], false).is_empty());
        assert!(unused(&["--log-file=l"], false).is_empty());
        assert!(unused(&[], false).is_empty());
    }
}
