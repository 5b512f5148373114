//! The `zarrfs` binary.

#[global_allocator]
static ALLOC: zarrfs::huge_pages::HugePageAlloc = zarrfs::huge_pages::HugePageAlloc;

fn main() {
    std::process::exit(zarrfs::cli::main());
}
