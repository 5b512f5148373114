//! The `zarrfs` binary.

#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options: transparent huge pages for its extents and metadata.
#[cfg(feature = "jemalloc")]
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8] = b"thp:always,metadata_thp:auto\0";

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(not(any(feature = "jemalloc", feature = "mimalloc")))]
#[global_allocator]
static ALLOC: zarrfs::memory::Allocator = zarrfs::memory::Allocator;

fn main() {
    std::process::exit(zarrfs::cli::main());
}
