//! The `zarrfs` binary.

fn main() {
    std::process::exit(zarrfs::cli::main());
}
