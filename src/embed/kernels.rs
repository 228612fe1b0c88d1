//! Which of tract's arithmetic kernels run the models.
//!
//! tract picks its matmul, exp and softmax kernels per instruction set: FMA/AVX on x86-64,
//! simd128 on wasm32. They sum and round differently, so the same model gives answers that
//! differ in the last bits between a server and a browser (|Δ| ~1e-6). The *portable* kernels
//! give the same bits everywhere: the embedding model runs on [`super::bert`], whose sums have
//! one order on every target (as it always does in wasm), and the reranker on tract's generic
//! Rust code, chosen natively by taking every x86-64 feature out of tract's instruction-set
//! probe and in wasm by building without simd128 (`www/pkg/portable`). With them native and
//! wasm answers are byte-identical, the reranker at 2–4× its inference time
//! (`docs/measurements/2026-11-26-wasm-builds-and-parity.md`).

use crate::error::{Error, Result};

/// Fast: the best kernels for this CPU (or simd128 in wasm). Portable: the generic ones,
/// identical everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    Fast,
    Portable,
}

impl Kernels {
    pub fn name(self) -> &'static str {
        match self {
            Kernels::Fast => "fast",
            Kernels::Portable => "portable",
        }
    }
}

impl std::str::FromStr for Kernels {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "fast" => Ok(Kernels::Fast),
            "portable" => Ok(Kernels::Portable),
            _ => Err(format!("{s:?}: expected fast or portable")),
        }
    }
}

/// Chooses the kernels for this process. tract probes the instruction set once, when the first
/// model is loaded, so this has to run before that; afterwards asking for other kernels than
/// the ones in use is an error rather than a silent no-op.
pub fn use_kernels(wanted: Kernels) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    if wanted == Kernels::Portable {
        use tract_onnx::tract_core::tract_linalg::{isa::Isa, knobs::TRACT_CPU_ISA};
        let features: Vec<String> = Isa::ALL
            .into_iter()
            .filter(|i| !i.is_arch() && i.arch() == Isa::X86_64.arch())
            .map(|i| format!("-{}", i.name()))
            .collect();
        TRACT_CPU_ISA.set(Some(features.join(",")));
    }
    let active = kernels();
    if active == wanted {
        Ok(())
    } else {
        Err(Error::Model(format!(
            "{} kernels asked for, but this {} ({})",
            wanted.name(),
            if cfg!(target_arch = "x86_64") {
                "process already runs the other ones: choose before loading a model"
            } else if cfg!(target_arch = "wasm32") {
                "build has the other ones compiled in: load pkg/full or pkg/portable"
            } else {
                "architecture has no portable kernels"
            },
            active.name()
        )))
    }
}

/// The kernels in use (probing the instruction set if no model did yet).
pub fn kernels() -> Kernels {
    #[cfg(target_arch = "wasm32")]
    {
        if cfg!(target_feature = "simd128") {
            Kernels::Fast
        } else {
            Kernels::Portable
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        use tract_onnx::tract_core::tract_linalg::isa;
        if isa::native().iter().all(|i| i.is_arch()) {
            Kernels::Portable
        } else {
            Kernels::Fast
        }
    }
    // aarch64 and others: even tract's generic code takes NEON paths there.
    #[cfg(not(any(target_arch = "wasm32", target_arch = "x86_64")))]
    Kernels::Fast
}
