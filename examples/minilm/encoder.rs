//! The encoder of `model.tfn` on a checkpoint with BERT's PyTorch names, and the tokenisation
//! sentence-transformers does in front of it (truncation at 256 tokens, padding to the longest
//! text of a batch). `tests/minilm.rs` includes this file to test the same code.

use ndarray::{Array2, ArrayView2, Ix2};
use std::path::Path;
use tfn::weights::{Bound, Mapping, Weights};
use tfn::{Session, SessionOptions, Value};

/// The encoder, written in tfn.
pub const MODEL: &str = include_str!("model.tfn");

/// sentence-transformers' `max_seq_length` for all-MiniLM-L6-v2: longer texts are truncated
/// (the 256 tokens include `[CLS]` and `[SEP]`).
pub const MAX_TOKENS: usize = 256;

/// `embed`'s parameters, named as PyTorch's `BertModel` names them: `{i}` stacks the layers
/// along the loop axis, `:T` reads a linear layer's `[out, in]` weight as `[in, out]` (a view).
pub const MAPPING: &[&str] = &[
    "word=embeddings.word_embeddings.weight",
    "pos=embeddings.position_embeddings.weight",
    "typ=embeddings.token_type_embeddings.weight",
    "emb_g=embeddings.LayerNorm.weight",
    "emb_b=embeddings.LayerNorm.bias",
    "wq=encoder.layer.{i}.attention.self.query.weight:T",
    "bq=encoder.layer.{i}.attention.self.query.bias",
    "wk=encoder.layer.{i}.attention.self.key.weight:T",
    "bk=encoder.layer.{i}.attention.self.key.bias",
    "wv=encoder.layer.{i}.attention.self.value.weight:T",
    "bv=encoder.layer.{i}.attention.self.value.bias",
    "wo=encoder.layer.{i}.attention.output.dense.weight:T",
    "bo=encoder.layer.{i}.attention.output.dense.bias",
    "ln1_g=encoder.layer.{i}.attention.output.LayerNorm.weight",
    "ln1_b=encoder.layer.{i}.attention.output.LayerNorm.bias",
    "w1=encoder.layer.{i}.intermediate.dense.weight:T",
    "b1=encoder.layer.{i}.intermediate.dense.bias",
    "w2=encoder.layer.{i}.output.dense.weight:T",
    "b2=encoder.layer.{i}.output.dense.bias",
    "ln2_g=encoder.layer.{i}.output.LayerNorm.weight",
    "ln2_b=encoder.layer.{i}.output.LayerNorm.bias",
];

/// One text's token ids, attention mask and token types (`[CLS] ... [SEP]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Tokens {
    pub ids: Vec<i64>,
    pub mask: Vec<i64>,
    pub types: Vec<i64>,
}

/// Token ids, attention mask and token types of a batch, `[B, T]`, padded with 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    pub ids: Array2<i64>,
    pub mask: Array2<i64>,
    pub types: Array2<i64>,
}

impl Batch {
    /// Pads texts to the longest one.
    pub fn pad(rows: &[Tokens]) -> Batch {
        let t = rows.iter().map(|r| r.ids.len()).max().unwrap_or(0);
        let mut b = Batch {
            ids: Array2::zeros((rows.len(), t)),
            mask: Array2::zeros((rows.len(), t)),
            types: Array2::zeros((rows.len(), t)),
        };
        for (i, r) in rows.iter().enumerate() {
            for j in 0..r.ids.len() {
                b.ids[[i, j]] = r.ids[j];
                b.mask[[i, j]] = r.mask[j];
                b.types[[i, j]] = r.types[j];
            }
        }
        b
    }
}

/// The encoder: a session with `model.tfn` loaded and the checkpoint's tensors bound to
/// `embed`'s parameters.
pub struct Encoder {
    session: Session,
    weights: Bound<Weights>,
    heads: i64,
}

impl Encoder {
    /// Opens (memory-maps and validates) the checkpoint and binds [`MAPPING`]; `heads` is the
    /// config's `num_attention_heads`.
    pub fn open(
        checkpoint: &Path,
        heads: usize,
        options: SessionOptions,
    ) -> Result<Encoder, String> {
        let session = Session::with_options(options);
        session.load_str("examples/minilm/model.tfn", MODEL).map_err(|e| e.to_string())?;
        let file = Weights::open(checkpoint).map_err(|e| e.to_string())?;
        let mapping = Mapping::parse(MAPPING).map_err(|e| e.to_string())?;
        let weights = file.bind(&mapping).map_err(|e| e.to_string())?;
        Ok(Encoder { session, weights, heads: heads as i64 })
    }

    /// The session's counters (compiles, compile time).
    pub fn stats(&self) -> tfn::Stats {
        self.session.stats()
    }

    /// The unit-length embeddings of a batch, `[B, hidden]`.
    pub fn embed(&self, batch: &Batch) -> Result<Array2<f32>, String> {
        let args = [
            Value::from(batch.ids.view().into_dyn()),
            Value::from(batch.mask.view().into_dyn()),
            Value::from(batch.types.view().into_dyn()),
        ];
        let kw = [("heads", Value::from(self.heads))];
        let out = self
            .session
            .call_with_kw("embed", &args, &kw, &self.weights)
            .map_err(|e| e.to_string())?;
        let t = out.into_iter().next().and_then(|v| v.into_tensor()).ok_or("no result")?;
        match t {
            tfn::Tensor::F32(a) => a.into_dimensionality::<Ix2>().map_err(|e| e.to_string()),
            other => Err(format!("embed returned {:?}, not f32", other.dtype())),
        }
    }
}

/// The tokenizer of `tokenizer.json` as sentence-transformers runs it: truncation at
/// [`MAX_TOKENS`] (longest first, from the end), no padding (batches pad themselves).
pub fn tokenizer(path: &Path) -> Result<tokenizers::Tokenizer, String> {
    use tokenizers::TruncationParams;
    let mut t =
        tokenizers::Tokenizer::from_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let truncation = TruncationParams { max_length: MAX_TOKENS, ..Default::default() };
    t.with_truncation(Some(truncation)).map_err(|e| e.to_string())?;
    t.with_padding(None);
    Ok(t)
}

/// `[CLS] tokens [SEP]` of each text, truncated.
pub fn tokenize(t: &tokenizers::Tokenizer, texts: &[&str]) -> Result<Vec<Tokens>, String> {
    let wide = |v: &[u32]| v.iter().map(|&x| i64::from(x)).collect::<Vec<i64>>();
    texts
        .iter()
        .map(|text| {
            let e = t.encode(*text, true).map_err(|e| e.to_string())?;
            Ok(Tokens {
                ids: wide(e.get_ids()),
                mask: wide(e.get_attention_mask()),
                types: wide(e.get_type_ids()),
            })
        })
        .collect()
}

/// Row `i` against row `j`: the cosine similarity of unit vectors.
pub fn similarity(e: ArrayView2<f32>) -> Array2<f32> {
    e.dot(&e.t())
}
