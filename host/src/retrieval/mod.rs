//! What memory and the skill index both search with: embedders and their vectors
//! ([`embed`]: the trait, the built-in hash embedder, `dot`, stemming), how a vector is
//! stored (`to_blob`, `from_blob`), and how keyword and vector scores are fused and
//! ranked ([`rank`]). Neither memory nor the skill manager reaches into the other's
//! storage for these.

pub mod embed;
pub mod rank;

/// `vector` as stored: little-endian `f32`s.
pub fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The vector [`to_blob`] stored.
pub fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}
