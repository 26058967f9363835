//! Trains the GPT-style character model of `model.tfn` on Shakespeare, from Rust.
//!
//! ```text
//! cargo run --release --example char_lm                 # train, then sample
//! cargo run --release --example char_lm -- --layers 4   # four blocks instead of two
//! cargo run --release --example char_lm -- --help       # sizes, steps, --init, --log, ...
//! ```
//!
//! Each step draws a batch (`corpus::batch`), runs `Session::value_and_vjp` on `loss` — one
//! compiled graph for the forward pass and every gradient — and applies std:optim's fused
//! `adamw` to each parameter. Nothing but the batch sampler, the learning-rate schedule and the
//! final sampling loop runs outside tfn. docs/char-lm.md walks through it; `../common/` is
//! what it shares with the cnn example (parameters, AdamW's state, progress bar, CSV log).

#[path = "../common/mod.rs"]
mod common;
mod corpus;
mod params;

use clap::Parser;
use common::optim::AdamW;
use common::params::{into_f32, Param};
use common::progress::{Bar, CsvLog};
use corpus::{Corpus, SplitMix64};
use ndarray::{arr0, ArrayD, IxDyn};
use params::Config;
use std::path::PathBuf;
use std::time::Instant;
use tfn::{Backend, Session, SessionOptions, Value};

const MODEL: &str = include_str!("model.tfn");
const TEXT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/char_lm/data/shakespeare.txt");

#[derive(Parser, Debug)]
#[command(about = "Train a character-level GPT written in tfn")]
struct Args {
    /// Optimisation steps.
    #[arg(long, default_value_t = 1500)]
    steps: usize,
    /// Sequences per batch.
    #[arg(long, default_value_t = 16)]
    batch: usize,
    /// Tokens per sequence (the context length).
    #[arg(long, default_value_t = 64)]
    block: usize,
    /// Channels of the residual stream.
    #[arg(long, default_value_t = 128)]
    channels: usize,
    /// Attention heads (must divide --channels).
    #[arg(long, default_value_t = 4)]
    heads: usize,
    /// Transformer blocks (the depth: the first axis of every stacked block weight).
    #[arg(long, default_value_t = 2)]
    layers: usize,
    /// Peak learning rate (linear warm-up, then cosine decay to a tenth).
    #[arg(long, default_value_t = 2e-3)]
    lr: f64,
    /// Warm-up steps.
    #[arg(long, default_value_t = 100)]
    warmup: usize,
    /// AdamW weight decay of the blocks' matrices.
    #[arg(long, default_value_t = 0.1)]
    weight_decay: f64,
    /// Dropout probability on the embeddings and both residual branches.
    #[arg(long, default_value_t = 0.1)]
    dropout: f64,
    /// Seed of the batch sampler, the initial weights and dropout.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Kernel threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Run on tfn's interpreter instead of the JIT (slow; for checking).
    #[arg(long)]
    interp: bool,
    /// Store the blocks' input only every ceil(sqrt(layers)) blocks and recompute the others in
    /// the backward pass (SessionOptions::checkpoint_loops: less memory, more time).
    #[arg(long)]
    checkpoint: bool,
    /// Read the initial weights from DIR/NAME.npy (names in model.tfn's header; a block weight
    /// is one file of all blocks, [layers, ...]).
    #[arg(long, value_name = "DIR")]
    init: Option<PathBuf>,
    /// Write the initial weights to DIR/NAME.npy (for another framework's --init).
    #[arg(long, value_name = "DIR")]
    save_init: Option<PathBuf>,
    /// Write step,loss,valid_loss,lr,ms,tokens_per_s to FILE (CSV).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Validate every N steps (mean loss of 8 fixed validation batches, no dropout).
    #[arg(long, default_value_t = 250)]
    eval_every: usize,
    /// Characters to sample after training.
    #[arg(long, default_value_t = 400)]
    sample: usize,
    /// The text to train on.
    #[arg(long, default_value = TEXT)]
    text: PathBuf,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("char_lm: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    if args.heads == 0 || !args.channels.is_multiple_of(args.heads) {
        return Err(format!("--heads {} must divide --channels {}", args.heads, args.channels));
    }
    if args.layers == 0 {
        return Err("--layers must be at least 1".into());
    }
    if !(0.0..1.0).contains(&args.dropout) {
        return Err(format!("--dropout {} must be in [0, 1)", args.dropout));
    }
    let corpus = Corpus::load(&args.text)?;
    if corpus.valid.len() < args.block + 2 || args.batch == 0 || args.steps == 0 {
        return Err("the text is too short for --block, or --batch/--steps is 0".into());
    }
    let config = Config {
        vocab: corpus.alphabet.len(),
        block: args.block,
        channels: args.channels,
        heads: args.heads,
        layers: args.layers,
    };
    let threads = args.threads.unwrap_or_else(|| SessionOptions::default().threads);
    let backend = if args.interp { Backend::Interp } else { Backend::Jit };
    let options = SessionOptions {
        backend,
        threads,
        checkpoint_loops: args.checkpoint,
        ..Default::default()
    };
    let session = Session::with_options(options);
    session.load_str("model.tfn", MODEL).map_err(|e| format!("model.tfn does not load:\n{e}"))?;

    let layout = params::layout(&config);
    let mut params = match &args.init {
        Some(dir) => common::params::load(dir, &layout)?,
        None => common::params::initialise(&session, &layout, args.seed as i64)?,
    };
    if let Some(dir) = &args.save_init {
        common::params::save(dir, &params)?;
    }
    let count = common::params::count(&params);
    let unigram = corpus.unigram_entropy();
    eprintln!(
        "char_lm: {} symbols, {} training tokens, {} blocks, {count} parameters, {threads} \
         thread(s); unigram entropy {unigram:.3} nats",
        config.vocab,
        corpus.train.len(),
        config.layers
    );

    let mut trainer = Trainer::new(&session, &config, &args, &params);
    let mut log = CsvLog::create(args.log.as_deref(), "step,loss,valid_loss,lr,ms,tokens_per_s")?;
    let mut bar = Bar::new(args.steps, 0.95, "tok");
    let mut rng = SplitMix64(args.seed);
    let started = Instant::now();
    let mut last_valid = None;
    let before = session.stats();
    for step in 1..=args.steps {
        let lr = schedule(&args, step);
        let t0 = Instant::now();
        let (inputs, targets) = corpus::batch(&corpus.train, args.batch, args.block, &mut rng);
        let loss = trainer.step(&mut params, &inputs, &targets, step, lr)?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        if step == 1 {
            let stats = session.stats();
            eprintln!(
                "char_lm: first step {ms:.0} ms, of which compiling {:.0} ms ({} functions)",
                (stats.compile_time - before.compile_time).as_secs_f64() * 1e3,
                stats.compiles - before.compiles
            );
        }
        let valid = if step.is_multiple_of(args.eval_every.max(1)) || step == args.steps {
            let v = trainer.validate(&params, &corpus)?;
            last_valid = Some(v);
            Some(v)
        } else {
            None
        };
        let tokens_per_s = (args.batch * args.block) as f64 / (ms / 1e3);
        let valid = valid.map_or(String::new(), |v| format!("{v}"));
        log.row(format_args!("{step},{loss},{valid},{lr:e},{ms:.3},{tokens_per_s:.0}"))?;
        let shown = last_valid.map(|v| format!("valid {v:.3}"));
        let print = step.is_multiple_of(100) || step == args.steps;
        bar.update(step, loss, shown.as_deref(), tokens_per_s, print);
    }
    bar.finish();
    log.finish()?;
    let seconds = started.elapsed().as_secs_f64();
    let tokens = (args.steps * args.batch * args.block) as f64;
    eprintln!(
        "char_lm: {} steps in {seconds:.1} s ({:.0} tokens/s); validation loss {:.3} against the \
         unigram entropy {unigram:.3}",
        args.steps,
        tokens / seconds,
        last_valid.unwrap_or(f32::NAN)
    );
    if args.sample > 0 {
        let text = trainer.sample(&params, &corpus, args.sample, args.seed)?;
        println!("{text}");
    }
    Ok(())
}

/// Linear warm-up to `--lr`, then cosine decay to a tenth of it at the last step.
fn schedule(args: &Args, step: usize) -> f64 {
    if step <= args.warmup {
        return args.lr * step as f64 / args.warmup as f64;
    }
    let progress = (step - args.warmup) as f64 / (args.steps - args.warmup).max(1) as f64;
    let cosine = 0.5 * (1.0 + (std::f64::consts::PI * progress.min(1.0)).cos());
    args.lr * (0.1 + 0.9 * cosine)
}

/// The calls into tfn: the loss and its gradients, AdamW, validation and sampling.
struct Trainer<'s> {
    session: &'s Session,
    config: Config,
    batch: usize,
    dropout: f64,
    seed: i64,
    optimizer: AdamW,
}

impl<'s> Trainer<'s> {
    fn new(session: &'s Session, config: &Config, args: &Args, params: &[Param]) -> Self {
        Trainer {
            session,
            config: *config,
            batch: args.batch,
            dropout: args.dropout,
            seed: args.seed as i64,
            optimizer: AdamW::new(params, 0.9, 0.99, args.weight_decay),
        }
    }

    fn attributes(&self, dropout: f64) -> Vec<(&'static str, Value<'static>)> {
        let c = &self.config;
        vec![
            ("heads", Value::from(c.heads as i64)),
            ("scale", Value::from(1.0 / (c.head_dim() as f64).sqrt())),
            ("p", Value::from(dropout)),
        ]
    }

    fn tokens(&self, ids: &[i64], rows: usize) -> Result<ArrayD<i64>, String> {
        ArrayD::from_shape_vec(IxDyn(&[rows, self.config.block]), ids.to_vec())
            .map_err(|e| e.to_string())
    }

    /// One optimisation step; returns the batch's loss before the update.
    fn step(
        &mut self,
        params: &mut [Param],
        inputs: &[i64],
        targets: &[i64],
        step: usize,
        lr: f64,
    ) -> Result<f32, String> {
        let tokens = self.tokens(inputs, self.batch)?;
        let targets = self.tokens(targets, self.batch)?;
        // Dropout's key: the 2 * layers + 2 sites of a step use key + 0, 1, ...; steps advance
        // it by that many rounded up to a multiple of 8, so no two sites or steps share a mask.
        let stride = (2 * self.config.layers + 2).next_multiple_of(8) as i64;
        let key = ArrayD::from_shape_vec(IxDyn(&[2]), vec![self.seed, stride * step as i64])
            .map_err(|e| e.to_string())?;
        let mut args = vec![Value::from(tokens.view()), Value::from(targets.view())];
        args.push(Value::from(key.view()));
        args.extend(params.iter().map(|p| Value::from(p.value.view())));
        let seed = arr0(1.0f32).into_dyn();
        let kwargs = self.attributes(self.dropout);
        let (values, grads) = self
            .session
            .value_and_vjp_kw("loss", &args, &kwargs, &[Value::from(seed.view())])
            .map_err(|e| format!("step {step}: {e}"))?;
        let loss = into_f32(values.into_iter().next())?;
        let loss = loss.iter().next().copied().unwrap_or(f32::NAN);
        self.optimizer.update(self.session, params, grads, step, lr)?;
        Ok(loss)
    }

    /// Mean loss over 8 fixed validation batches, without dropout.
    fn validate(&self, params: &[Param], corpus: &Corpus) -> Result<f32, String> {
        let mut rng = SplitMix64(0x5eed);
        let key = ArrayD::from_shape_vec(IxDyn(&[2]), vec![0i64, 0]).map_err(|e| e.to_string())?;
        let mut total = 0.0;
        for _ in 0..8 {
            let (inputs, targets) =
                corpus::batch(&corpus.valid, self.batch, self.config.block, &mut rng);
            let tokens = self.tokens(&inputs, self.batch)?;
            let targets = self.tokens(&targets, self.batch)?;
            let mut args = vec![Value::from(tokens.view()), Value::from(targets.view())];
            args.push(Value::from(key.view()));
            args.extend(params.iter().map(|p| Value::from(p.value.view())));
            let out = self
                .session
                .call_kw("loss", &args, &self.attributes(0.0))
                .map_err(|e| format!("validation: {e}"))?;
            total += into_f32(out.into_iter().next())?.iter().sum::<f32>();
        }
        Ok(total / 8.0)
    }

    /// `n` characters continuing the start of the validation text, sampled at temperature 0.8.
    fn sample(
        &self,
        params: &[Param],
        corpus: &Corpus,
        n: usize,
        seed: u64,
    ) -> Result<String, String> {
        let t = self.config.block;
        let mut context: Vec<i64> = corpus.valid[..t].to_vec();
        let mut out = Vec::with_capacity(n);
        let mut rng = SplitMix64(seed ^ 0xc0ffee);
        let key = ArrayD::from_shape_vec(IxDyn(&[2]), vec![0i64, 0]).map_err(|e| e.to_string())?;
        for _ in 0..n {
            let tokens = self.tokens(&context[context.len() - t..], 1)?;
            let mut args = vec![Value::from(tokens.view()), Value::from(key.view())];
            args.extend(params.iter().map(|p| Value::from(p.value.view())));
            let logits = self
                .session
                .call_kw("gpt", &args, &self.attributes(0.0))
                .map_err(|e| format!("sampling: {e}"))?;
            let logits = into_f32(logits.into_iter().next())?;
            let last: Vec<f64> = logits
                .as_slice()
                .ok_or("logits are not contiguous")?
                .chunks(self.config.vocab)
                .next_back()
                .ok_or("no logits")?
                .iter()
                .map(|&l| f64::from(l) / 0.8)
                .collect();
            let top = last.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = last.iter().map(|l| (l - top).exp()).collect();
            let mut r = rng.next_f64() * weights.iter().sum::<f64>();
            let mut pick = weights.len() - 1;
            for (i, w) in weights.iter().enumerate() {
                if r < *w {
                    pick = i;
                    break;
                }
                r -= w;
            }
            context.push(pick as i64);
            out.push(pick as i64);
        }
        Ok(format!("{}{}", corpus.decode(&corpus.valid[..t]), corpus.decode(&out)))
    }
}
