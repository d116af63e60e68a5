//! A model's Q4_1 weights held as Q8_0: converted once, kept beside the model.

use std::path::{Path, PathBuf};

use candle_core::Device;
use candle_core::quantized::gguf_file;

use super::arch::Weights;
use super::damaged;
use crate::error::{Error, Result};

/// The model's weights, with those stored as Q4_1 held as Q8_0 instead: candle
/// multiplies Q8_0 with the CPU's vector instructions and Q4_1 without, which makes
/// reading a prompt several times faster for 45 MB more memory (the Q4_1 file's 98 MB
/// become ~145 MB). The converted file is kept beside the model (see
/// [`converted_path`]), so only the first load converts; the conversion writes it
/// tensor by tensor to disk rather than into memory, so at most one copy of the
/// weights is held at a time.
pub(super) fn weights_of(
    path: &Path,
    family: &str,
    content: gguf_file::Content,
    file: &mut std::fs::File,
) -> Result<Weights> {
    use candle_core::quantized::GgmlDType;
    let fail = |e: candle_core::Error| damaged(path, format!("its weights do not load ({e})"));
    let slow = |t: &gguf_file::TensorInfo| t.ggml_dtype == GgmlDType::Q4_1;
    if !content.tensor_infos.values().any(slow) {
        return Weights::read(family, content, file).map_err(fail);
    }
    let converted = converted_path(path)?;
    if !super::verify::unchanged(&converted) {
        convert(path, &content, file, &converted)?;
    }
    let mut held = std::fs::File::open(&converted).map_err(Error::io_at(&converted))?;
    let content = gguf_file::Content::read(&mut held).map_err(fail)?;
    Weights::read(family, content, &mut held).map_err(fail)
}

/// Where the Q8_0 copy of the model at `path` is kept: beside it, named after the
/// file's size and time, so a model installed again is converted again.
fn converted_path(path: &Path) -> Result<PathBuf> {
    let meta = std::fs::metadata(path).map_err(Error::io_at(path))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    Ok(path.with_file_name(format!(".{name}.{}-{modified}.q8_0.gguf", meta.len())))
}

/// Writes the weights of `content` to `target` with the Q4_1 tensors as Q8_0, one at
/// a time, through a temporary file and a rename; records the result's checksum and
/// removes the copies of earlier versions of the model.
fn convert(
    path: &Path,
    content: &gguf_file::Content,
    file: &mut std::fs::File,
    target: &Path,
) -> Result<()> {
    use candle_core::quantized::{GgmlDType, QTensor};
    let fail = |e: candle_core::Error| damaged(path, format!("its weights do not convert ({e})"));
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut tensors = Vec::with_capacity(content.tensor_infos.len());
    for (name, info) in &content.tensor_infos {
        let tensor = content.tensor(file, name, &Device::Cpu).map_err(fail)?;
        let tensor = if info.ggml_dtype == GgmlDType::Q4_1 {
            let values = tensor.dequantize(&Device::Cpu).map_err(fail)?;
            QTensor::quantize(&values, GgmlDType::Q8_0).map_err(fail)?
        } else {
            tensor
        };
        tensors.push((name.clone(), tensor));
    }
    let metadata: Vec<(&str, &gguf_file::Value)> = content
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, t)| (k.as_str(), t)).collect();
    let staging = tempfile::NamedTempFile::new_in(dir).map_err(Error::io_at(dir))?;
    let mut out = std::io::BufWriter::new(staging.as_file());
    gguf_file::write(&mut out, &metadata, &refs).map_err(fail)?;
    std::io::Write::flush(&mut out).map_err(Error::io_at(staging.path()))?;
    drop(out);
    drop(refs);
    drop(tensors);
    staging
        .persist(target)
        .map_err(|e| Error::io_at(target)(e.error))?;
    super::verify::record(target, &super::verify::sha256_of(target)?)?;
    // Copies made for earlier versions of this model, and their records.
    let file_name = |p: &Path| {
        p.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    let (model, kept) = (file_name(path), file_name(target));
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let copy = name
            .trim_start_matches('.')
            .starts_with(&format!("{model}."))
            && (name.ends_with(".q8_0.gguf") || name.ends_with(".q8_0.gguf.verified"));
        if copy && name != kept && name != format!(".{kept}.verified") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(())
}
