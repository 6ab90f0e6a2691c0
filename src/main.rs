fn main() -> std::process::ExitCode {
    simbench::cli::main()
}
