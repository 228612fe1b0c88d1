//! A converter child that fails the ways a hostile file can make a parser fail, for the
//! isolation's tests (`index-builder/tests/isolation.rs`); never part of a release binary.
//!
//! It answers `convert-worker --format F --stem S --rel R` as index-builder's own child does,
//! after the fault its name ends in (the tests link it as `faulty-<fault>`):
//! `stack-overflow`, `allocate`, `hang` or `spin`.
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let name = std::path::Path::new(&args[0])
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    match name.strip_prefix("faulty-").unwrap_or_default() {
        "stack-overflow" => {
            #[allow(unconditional_recursion)]
            fn deeper(n: u64) -> u64 {
                let pad = std::hint::black_box([n; 64]);
                deeper(pad[3] + 1) + pad[7]
            }
            std::hint::black_box(deeper(0));
        }
        "allocate" => {
            let v = vec![1u8; 1 << 40];
            std::hint::black_box(&v);
        }
        "hang" => loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        },
        "spin" => loop {
            std::hint::black_box(0u64);
        },
        _ => {}
    }
    let arg = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_default()
    };
    index_builder::isolate::worker(&arg("--format"), &arg("--stem"), &arg("--rel"))
}
