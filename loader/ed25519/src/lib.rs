//! Ed25519 verification for pith-graph: one `VerifyingKey` per pinned key, decoded once.
//!
//! The rules are libsodium's (`crypto_sign_verify_detached`, what PyNaCl calls), which
//! ed25519-dalek's `verify_strict` implements except for one case, handled here:
//!
//! * the signature's S must be canonical (below the group order): both;
//! * R and the key must not be of small order: both;
//! * the equation is the cofactorless one, compared on R's bytes: both;
//! * the key's encoding must be canonical: libsodium only, so a key whose encoding is not
//!   its point's canonical one is kept but never verifies anything.
//!
//! The agreement is checked on shared vectors in tests/test_signatures.py.

use ed25519_dalek::{Signature, VerifyingKey as DalekKey};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// An Ed25519 public key, decoded once; `verify` checks one signature with it.
#[pyclass(frozen, module = "pith_graph.loader._ed25519")]
struct VerifyingKey {
    /// `None`: the 32 bytes are not a point libsodium would accept as a key.
    key: Option<DalekKey>,
}

#[pymethods]
impl VerifyingKey {
    #[new]
    fn new(public_key: &[u8]) -> PyResult<Self> {
        let bytes = <&[u8; 32]>::try_from(public_key)
            .map_err(|_| PyValueError::new_err("an Ed25519 public key is 32 bytes"))?;
        let key = DalekKey::from_bytes(bytes)
            .ok()
            .filter(|key| !key.is_weak() && key.to_edwards().compress().as_bytes() == bytes);
        Ok(VerifyingKey { key })
    }

    /// Whether `signature` (64 bytes) is this key's signature over `message`.
    fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let (Some(key), Ok(bytes)) = (&self.key, <&[u8; 64]>::try_from(signature)) else {
            return false;
        };
        key.verify_strict(message, &Signature::from_bytes(bytes)).is_ok()
    }
}

#[pymodule]
fn _ed25519(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<VerifyingKey>()
}
