//! `MemoryProofs` against the shared proof-of-possession suite.

use std::sync::Arc;

use boxoffice_engine::ports::ProofMemory;
use boxoffice_store_memory::MemoryProofs;

boxoffice_testkit::proofs_conformance!(async {
    Arc::new(MemoryProofs::default()) as Arc<dyn ProofMemory>
});
boxoffice_testkit::bounded_proofs_conformance!(|cap: usize| async move {
    Arc::new(MemoryProofs::new(cap)) as Arc<dyn ProofMemory>
});
