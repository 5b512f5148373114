//! The `zarrfs` binary.

#[global_allocator]
static ALLOC: zarrfs::memory::Allocator = zarrfs::memory::Allocator;

fn main() {
    std::process::exit(zarrfs::cli::main());
}
