//! The minilm example's encoder (`examples/minilm/model.tfn` through `encoder.rs`):
//!
//! - always (no network): a tiny randomly initialised BERT of the same structure (2 layers,
//!   hidden 32, 4 heads), written by the test as a safetensors file with PyTorch's names and
//!   `[out, in]` linears, against an independent ndarray reference in f64, on both backends,
//!   with padding and token types; a new batch size and sequence length reuse the compiled
//!   code;
//! - when the published checkpoint is in the cache or pip can fetch it (`fetch.rs`; set
//!   `TFN_MINILM_FETCH=0` to use the cache only): the embeddings of
//!   `examples/minilm/reference.txt` against sentence-transformers' (`reference.npy`, made by
//!   `reference.sh`), within 1e-5 and a cosine of at least 0.99999, on both backends.
//!   Without the checkpoint it prints why it skipped, on stderr past the test harness's
//!   capture.

#[allow(dead_code)]
#[path = "../examples/minilm/encoder.rs"]
mod encoder;
#[allow(dead_code)]
#[path = "../examples/minilm/fetch.rs"]
mod fetch;

use encoder::{Batch, Encoder, Tokens};
use ndarray::{s, Array1, Array2, Axis};
use std::io::Write;
use std::path::PathBuf;
use tfn::{Backend, SessionOptions, Tensor, TensorValue};

const VOCAB: usize = 30;
const POSITIONS: usize = 16;
const HIDDEN: usize = 32;
const HEADS: usize = 4;
const INTER: usize = 64;
const LAYERS: usize = 2;

fn options(backend: Backend) -> SessionOptions {
    SessionOptions { backend, threads: 2, ..Default::default() }
}

/// Deterministic values in [-scale, scale) (plus `centre`).
struct Lcg(u64);

impl Lcg {
    fn array(&mut self, shape: &[usize], centre: f32, scale: f32) -> ndarray::ArrayD<f32> {
        let n: usize = shape.iter().product();
        let values = (0..n)
            .map(|_| {
                self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let u = (self.0 >> 11) as f64 / (1u64 << 53) as f64;
                centre + scale * (2.0 * u as f32 - 1.0)
            })
            .collect();
        ndarray::ArrayD::from_shape_vec(shape.to_vec(), values).expect("shape")
    }
}

/// The tiny BERT's tensors, by PyTorch's names (linears `[out, in]`), plus two the encoder
/// does not read.
fn tiny_bert() -> Vec<(String, Tensor)> {
    let mut rng = Lcg(0x5eed);
    let mut out: Vec<(String, Tensor)> = Vec::new();
    let mut put = |name: &str, shape: &[usize], centre: f32, scale: f32| {
        out.push((name.to_string(), Tensor::F32(rng.array(shape, centre, scale))));
    };
    put("embeddings.word_embeddings.weight", &[VOCAB, HIDDEN], 0.0, 1.0);
    put("embeddings.position_embeddings.weight", &[POSITIONS, HIDDEN], 0.0, 0.5);
    put("embeddings.token_type_embeddings.weight", &[2, HIDDEN], 0.0, 0.5);
    put("embeddings.LayerNorm.weight", &[HIDDEN], 1.0, 0.2);
    put("embeddings.LayerNorm.bias", &[HIDDEN], 0.0, 0.1);
    for l in 0..LAYERS {
        let p = format!("encoder.layer.{l}.");
        for m in ["attention.self.query", "attention.self.key", "attention.self.value"] {
            put(&format!("{p}{m}.weight"), &[HIDDEN, HIDDEN], 0.0, 0.4);
            put(&format!("{p}{m}.bias"), &[HIDDEN], 0.0, 0.1);
        }
        put(&format!("{p}attention.output.dense.weight"), &[HIDDEN, HIDDEN], 0.0, 0.3);
        put(&format!("{p}attention.output.dense.bias"), &[HIDDEN], 0.0, 0.1);
        put(&format!("{p}attention.output.LayerNorm.weight"), &[HIDDEN], 1.0, 0.2);
        put(&format!("{p}attention.output.LayerNorm.bias"), &[HIDDEN], 0.0, 0.1);
        put(&format!("{p}intermediate.dense.weight"), &[INTER, HIDDEN], 0.0, 0.3);
        put(&format!("{p}intermediate.dense.bias"), &[INTER], 0.0, 0.1);
        put(&format!("{p}output.dense.weight"), &[HIDDEN, INTER], 0.0, 0.2);
        put(&format!("{p}output.dense.bias"), &[HIDDEN], 0.0, 0.1);
        put(&format!("{p}output.LayerNorm.weight"), &[HIDDEN], 1.0, 0.2);
        put(&format!("{p}output.LayerNorm.bias"), &[HIDDEN], 0.0, 0.1);
    }
    put("pooler.dense.weight", &[HIDDEN, HIDDEN], 0.0, 0.3);
    let ids = ndarray::ArrayD::from_shape_vec(vec![1, POSITIONS], (0..POSITIONS as i64).collect());
    out.push(("embeddings.position_ids".into(), Tensor::I64(ids.expect("shape"))));
    out
}

fn get(w: &[(String, Tensor)], name: &str) -> Array2<f64> {
    let (_, t) = w.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{name}"));
    let Tensor::F32(a) = t else { panic!("{name} is f32") };
    let a = a.mapv(f64::from);
    let (cols, n) = (a.shape().last().copied().unwrap_or(1), a.len());
    a.into_shape_with_order((n / cols, cols)).expect("2-d")
}

fn vector(w: &[(String, Tensor)], name: &str) -> Array1<f64> {
    get(w, name).row(0).to_owned()
}

fn layer_norm(x: &Array2<f64>, g: &Array1<f64>, b: &Array1<f64>) -> Array2<f64> {
    let mut y = x.clone();
    for mut row in y.rows_mut() {
        let mu = row.mean().unwrap_or(0.0);
        let var = row.mapv(|v| (v - mu) * (v - mu)).mean().unwrap_or(0.0);
        row.mapv_inplace(|v| (v - mu) / (var + 1e-12).sqrt());
        row.zip_mut_with(g, |v, g| *v *= g);
        row.zip_mut_with(b, |v, b| *v += b);
    }
    y
}

/// erf to about 1.2e-7 (Numerical Recipes' erfc by Chebyshev fit): independent of tfn's.
fn erf(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.26551223
            + t * (1.00002368
                + t * (0.37409196
                    + t * (0.09678418
                        + t * (-0.18628806
                            + t * (0.27886807
                                + t * (-1.13520398
                                    + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            .exp();
    (1.0 - r).copysign(x)
}

/// BertModel + mean pooling + normalisation, one text at a time (its real tokens only), in
/// f64: what `embed` must give for each row of a padded batch.
fn reference(w: &[(String, Tensor)], ids: &[i64], types: &[i64]) -> Array1<f64> {
    let t = ids.len();
    let d = HIDDEN / HEADS;
    let (word, pos, typ) = (
        get(w, "embeddings.word_embeddings.weight"),
        get(w, "embeddings.position_embeddings.weight"),
        get(w, "embeddings.token_type_embeddings.weight"),
    );
    let mut x = Array2::<f64>::zeros((t, HIDDEN));
    for i in 0..t {
        let row = &word.row(ids[i] as usize) + &pos.row(i) + typ.row(types[i] as usize);
        x.row_mut(i).assign(&row);
    }
    let mut h = layer_norm(
        &x,
        &vector(w, "embeddings.LayerNorm.weight"),
        &vector(w, "embeddings.LayerNorm.bias"),
    );
    let linear = |x: &Array2<f64>, name: &str| -> Array2<f64> {
        x.dot(&get(w, &format!("{name}.weight")).t()) + &vector(w, &format!("{name}.bias"))
    };
    for l in 0..LAYERS {
        let p = format!("encoder.layer.{l}.");
        let q = linear(&h, &format!("{p}attention.self.query"));
        let k = linear(&h, &format!("{p}attention.self.key"));
        let v = linear(&h, &format!("{p}attention.self.value"));
        let mut a = Array2::<f64>::zeros((t, HIDDEN));
        for head in 0..HEADS {
            let cols = s![.., head * d..(head + 1) * d];
            let scores = q.slice(cols).dot(&k.slice(cols).t()) / (d as f64).sqrt();
            let mut p = scores.clone();
            for mut row in p.rows_mut() {
                let m = row.fold(f64::NEG_INFINITY, |m, &v| m.max(v));
                row.mapv_inplace(|v| (v - m).exp());
                let sum = row.sum();
                row.mapv_inplace(|v| v / sum);
            }
            a.slice_mut(cols).assign(&p.dot(&v.slice(cols)));
        }
        let a = linear(&a, &format!("{p}attention.output.dense"));
        let h1 = layer_norm(
            &(&h + &a),
            &vector(w, &format!("{p}attention.output.LayerNorm.weight")),
            &vector(w, &format!("{p}attention.output.LayerNorm.bias")),
        );
        let f = linear(&h1, &format!("{p}intermediate.dense"))
            .mapv(|v| 0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2)));
        let f = linear(&f, &format!("{p}output.dense"));
        h = layer_norm(
            &(&h1 + &f),
            &vector(w, &format!("{p}output.LayerNorm.weight")),
            &vector(w, &format!("{p}output.LayerNorm.bias")),
        );
    }
    let pooled = h.mean_axis(Axis(0)).expect("tokens");
    let norm = pooled.dot(&pooled).sqrt().max(1e-12);
    pooled / norm
}

/// A batch of texts of `lengths` tokens (`[CLS] ... [SEP]`, ids from `seed`); the second text
/// is a pair with token type 1 on its second half.
fn texts(lengths: &[usize], seed: i64) -> Vec<Tokens> {
    lengths
        .iter()
        .enumerate()
        .map(|(r, &n)| {
            let ids: Vec<i64> = (0..n)
                .map(|j| match j {
                    0 => 1,
                    _ if j == n - 1 => 2,
                    _ => 3 + (seed + 7 * r as i64 + 5 * j as i64) % (VOCAB as i64 - 3),
                })
                .collect();
            let types = (0..n).map(|j| i64::from(r == 1 && j >= n / 2)).collect();
            Tokens { ids, mask: vec![1; n], types }
        })
        .collect()
}

fn max_abs_diff(a: &Array2<f32>, b: &Array2<f64>) -> f64 {
    a.iter().zip(b).map(|(x, y)| (f64::from(*x) - y).abs()).fold(0.0, f64::max)
}

#[test]
fn a_tiny_bert_matches_an_ndarray_reference_on_both_backends() {
    let weights = tiny_bert();
    let dir = std::env::temp_dir().join(format!("tfn-minilm-tiny-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join("tiny.safetensors");
    let named: Vec<(&str, TensorValue)> =
        weights.iter().map(|(n, t)| (n.as_str(), TensorValue::from(t.clone()))).collect();
    tfn::save_safetensors(&path, &named).expect("write the checkpoint");
    for backend in [Backend::Jit, Backend::Interp] {
        let enc = Encoder::open(&path, HEADS, options(backend)).expect("open");
        // Padding (7, 4 and 2 tokens: the empty text's [CLS] [SEP]), then another batch size
        // and sequence length.
        for (lengths, seed) in [(vec![7, 4, 2], 0), (vec![5, 9], 3)] {
            let rows = texts(&lengths, seed);
            let got = enc.embed(&Batch::pad(&rows)).expect("embed");
            let mut want = Array2::<f64>::zeros((rows.len(), HIDDEN));
            for (i, r) in rows.iter().enumerate() {
                want.row_mut(i).assign(&reference(&weights, &r.ids, &r.types));
            }
            let diff = max_abs_diff(&got, &want);
            assert!(diff <= 1e-5, "{backend:?}, lengths {lengths:?}: max |diff| {diff:e}");
        }
        if backend == Backend::Jit {
            let stats = enc.stats();
            assert_eq!(stats.compiles, 1, "a new batch size or length recompiled: {stats:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cache_refuses_a_missing_or_corrupt_file_naming_it() {
    // SHA-256's known answer (FIPS 180-2, "abc").
    let dir = std::env::temp_dir().join(format!("tfn-minilm-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    std::fs::write(dir.join("abc"), "abc").expect("write");
    let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    assert_eq!(fetch::sha256(&dir.join("abc")).expect("hash"), abc);
    let e = fetch::model_dir_in(&dir, false).expect_err("empty cache");
    assert!(e.contains("not in") && e.contains("fetching is off"), "{e}");
    // Every file there, one of them not the published one (a truncated checkpoint).
    for (name, _) in fetch::FILES {
        std::fs::write(dir.join(name), "{}").expect("write");
    }
    let e = fetch::model_dir_in(&dir, false).expect_err("corrupt cache");
    assert!(e.contains("model.safetensors has SHA-256") && e.contains("delete it"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The published checkpoint, or why it is not there (printed past the harness's capture:
/// a skip is never a silent pass).
fn checkpoint(test: &str) -> Option<PathBuf> {
    let fetch = std::env::var("TFN_MINILM_FETCH").map_or(true, |v| v != "0");
    match fetch::model_dir(fetch) {
        Ok(dir) => Some(dir),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: no checkpoint: {e}");
            None
        }
    }
}

#[test]
fn all_minilm_l6_v2_matches_sentence_transformers() {
    let test = "minilm::all_minilm_l6_v2_matches_sentence_transformers";
    let Some(dir) = checkpoint(test) else { return };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/minilm");
    let text = std::fs::read_to_string(root.join("reference.txt")).expect("reference.txt");
    let lines: Vec<&str> = text.lines().collect();
    let Tensor::F32(want) = tfn::npy::read(&root.join("reference.npy")).expect("reference.npy")
    else {
        panic!("reference.npy is f32")
    };
    let want = want.mapv(f64::from).into_dimensionality::<ndarray::Ix2>().expect("[N, 384]");
    assert_eq!(want.nrows(), lines.len());
    let tokenizer = encoder::tokenizer(&dir.join("tokenizer.json")).expect("tokenizer");
    let rows = encoder::tokenize(&tokenizer, &lines).expect("tokenize");
    assert_eq!(rows[5].ids, vec![101, 102], "the empty text is [CLS] [SEP]");
    let long = rows.iter().position(|r| r.ids.len() == encoder::MAX_TOKENS);
    let long = long.expect("the long text is truncated to 256 tokens");
    // The long text alone, the others as one padded batch (2 to 35 tokens): the debug build's
    // kernels are slow enough that padding every text to 256 would cost a minute.
    let others: Vec<usize> = (0..rows.len()).filter(|&i| i != long).collect();
    for backend in [Backend::Jit, Backend::Interp] {
        let enc =
            Encoder::open(&dir.join("model.safetensors"), 12, options(backend)).expect("open");
        let mut got = Array2::<f32>::zeros((rows.len(), 384));
        for group in [vec![long], others.clone()] {
            let batch: Vec<_> = group.iter().map(|&i| rows[i].clone()).collect();
            let emb = enc.embed(&Batch::pad(&batch)).expect("embed");
            for (k, &i) in group.iter().enumerate() {
                got.row_mut(i).assign(&emb.row(k));
            }
        }
        for (i, line) in lines.iter().enumerate() {
            let (g, w) = (got.row(i).mapv(f64::from), want.row(i));
            let diff = (&g - &w).mapv(f64::abs).fold(0.0, |m: f64, &v| m.max(v));
            let cos = g.dot(&w) / (g.dot(&g).sqrt() * w.dot(&w).sqrt());
            assert!(
                diff <= 1e-5 && cos >= 0.99999,
                "{backend:?}, line {i} {line:?}: max |diff| {diff:e}, cosine {cos}"
            );
        }
    }
}
