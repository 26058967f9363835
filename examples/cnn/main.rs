//! Trains the convolutional digit classifier of `model.tfn` on the 8×8 UCI digits, from Rust.
//!
//! ```text
//! cargo run --release --example cnn                 # train, then print the test accuracy
//! cargo run --release --example cnn -- --help       # epochs, sizes, --init, --log, ...
//! ```
//!
//! Each step takes a shuffled mini-batch (`data::epoch`), runs `Session::value_and_vjp` on
//! `loss` — one compiled graph for the forward pass and every gradient — and applies
//! std:optim's fused `adamw` to each parameter. After each epoch `predict` classifies the 359
//! held-out test images in one call. Nothing but the shuffling, the learning-rate schedule and
//! the arg-max of the logits runs outside tfn. docs/cnn.md walks through it; `../common/` is
//! what it shares with the char_lm example (parameters, AdamW's state, progress bar, CSV log).

#[path = "../common/mod.rs"]
mod common;
mod data;
mod params;

use clap::Parser;
use common::optim::AdamW;
use common::params::{into_f32, Param};
use common::progress::{Bar, CsvLog};
use data::{Split, SplitMix64};
use ndarray::{arr0, ArrayD};
use params::Config;
use std::path::PathBuf;
use std::time::Instant;
use tfn::{Backend, Session, SessionOptions, Value};

const MODEL: &str = include_str!("model.tfn");
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/cnn/data");

#[derive(Parser, Debug)]
#[command(about = "Train a convolutional digit classifier written in tfn")]
struct Args {
    /// Passes over the 1438 training images.
    #[arg(long, default_value_t = 20)]
    epochs: usize,
    /// Images per batch (the last batch of an epoch is smaller).
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Channels of the first convolution.
    #[arg(long, default_value_t = 16)]
    c1: usize,
    /// Channels of the second convolution.
    #[arg(long, default_value_t = 32)]
    c2: usize,
    /// Peak learning rate (cosine decay to a twentieth at the last step).
    #[arg(long, default_value_t = 3e-3)]
    lr: f64,
    /// AdamW weight decay of the weights (not the biases).
    #[arg(long, default_value_t = 1e-2)]
    weight_decay: f64,
    /// Seed of the initial weights and of the batch order (the test split is fixed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Kernel threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Run on tfn's interpreter instead of the JIT (slow; for checking).
    #[arg(long)]
    interp: bool,
    /// Read the initial weights from DIR/NAME.npy (names in model.tfn's header).
    #[arg(long, value_name = "DIR")]
    init: Option<PathBuf>,
    /// Write the initial weights to DIR/NAME.npy (for another framework's --init).
    #[arg(long, value_name = "DIR")]
    save_init: Option<PathBuf>,
    /// Write the trained weights to DIR/NAME.npy.
    #[arg(long, value_name = "DIR")]
    save: Option<PathBuf>,
    /// Write step,epoch,loss,test_accuracy,lr,ms,images_per_s to FILE (CSV).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// The directory holding images.npy and labels.npy.
    #[arg(long, default_value = DATA)]
    data: PathBuf,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("cnn: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    if args.batch == 0 || args.epochs == 0 || args.c1 == 0 || args.c2 == 0 {
        return Err("--batch, --epochs, --c1 and --c2 must be positive".into());
    }
    let (train, test) = data::load(&args.data)?;
    let config = Config { c1: args.c1, c2: args.c2 };
    let threads = args.threads.unwrap_or_else(|| SessionOptions::default().threads);
    let backend = if args.interp { Backend::Interp } else { Backend::Jit };
    let session = Session::with_options(SessionOptions { backend, threads, ..Default::default() });
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
    eprintln!(
        "cnn: {} training and {} test images, {count} parameters, {threads} thread(s)",
        train.len(),
        test.len()
    );

    let batches_per_epoch = train.len().div_ceil(args.batch);
    let steps = args.epochs * batches_per_epoch;
    let mut trainer = Trainer::new(&session, &config, &args, &params);
    let header = "step,epoch,loss,test_accuracy,lr,ms,images_per_s";
    let mut log = CsvLog::create(args.log.as_deref(), header)?;
    let mut bar = Bar::new(steps, 0.9, "img");
    let mut rng = SplitMix64(args.seed);
    let compiled_before = session.stats().compile_time;
    let started = Instant::now();
    let (mut step, mut accuracy, mut step_ms) = (0, None, Vec::with_capacity(steps));
    for epoch in 1..=args.epochs {
        let batches = data::epoch(train.len(), args.batch, &mut rng);
        let last = batches.len();
        for (i, rows) in batches.into_iter().enumerate() {
            step += 1;
            let lr = schedule(&args, step, steps);
            let t0 = Instant::now();
            let batch = train.select(&rows);
            let loss = trainer.step(&mut params, &batch, step, lr)?;
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            step_ms.push(ms);
            if step == 1 {
                let compiling = session.stats().compile_time - compiled_before;
                eprintln!(
                    "cnn: first step {ms:.0} ms, of which compiling the loss, its gradients and \
                     adamw {:.0} ms",
                    compiling.as_secs_f64() * 1e3
                );
            }
            let epoch_end = i + 1 == last;
            let tested = if epoch_end {
                accuracy = Some(trainer.accuracy(&params, &test)?);
                accuracy
            } else {
                None
            };
            let images_per_s = rows.len() as f64 / (ms / 1e3);
            let tested = tested.map_or(String::new(), |a| format!("{a}"));
            log.row(format_args!(
                "{step},{epoch},{loss},{tested},{lr:e},{ms:.3},{images_per_s:.0}"
            ))?;
            let shown = accuracy.map(|a| format!("test {:.2}%", 100.0 * a));
            bar.update(step, loss, shown.as_deref(), images_per_s, epoch_end);
        }
    }
    bar.finish();
    log.finish()?;
    let seconds = started.elapsed().as_secs_f64();
    step_ms.sort_by(f64::total_cmp);
    let median = step_ms[step_ms.len() / 2];
    eprintln!(
        "cnn: {steps} steps ({} epochs of batch {}) in {seconds:.2} s; median step {median:.2} ms \
         ({:.0} images/s)",
        args.epochs,
        args.batch,
        args.batch as f64 / (median / 1e3)
    );
    let t0 = Instant::now();
    let final_accuracy = trainer.accuracy(&params, &test)?;
    let predict_ms = t0.elapsed().as_secs_f64() * 1e3;
    let train_accuracy = trainer.accuracy(&params, &train)?;
    eprintln!(
        "cnn: train accuracy {:.2}%; predicting the {} test images took {predict_ms:.2} ms",
        100.0 * train_accuracy,
        test.len()
    );
    println!(
        "test accuracy (f32): {:.2}% ({} of {})",
        100.0 * final_accuracy,
        (final_accuracy * test.len() as f64).round(),
        test.len()
    );
    // The same network stored in bf16 (`predict_bf16`): the accuracy difference of a bf16
    // deployment.
    let bf16_accuracy = trainer.accuracy_of("predict_bf16", &params, &test)?;
    println!(
        "test accuracy (bf16 inference): {:.2}% ({} of {}; {:+.2} points against f32)",
        100.0 * bf16_accuracy,
        (bf16_accuracy * test.len() as f64).round(),
        test.len(),
        100.0 * (bf16_accuracy - final_accuracy)
    );
    if let Some(dir) = &args.save {
        common::params::save(dir, &params)?;
    }
    Ok(())
}

/// Cosine decay from `--lr` to a twentieth of it at the last step.
fn schedule(args: &Args, step: usize, steps: usize) -> f64 {
    let progress = (step - 1) as f64 / (steps - 1).max(1) as f64;
    let cosine = 0.5 * (1.0 + (std::f64::consts::PI * progress).cos());
    args.lr * (0.05 + 0.95 * cosine)
}

/// The calls into tfn: the loss and its gradients, AdamW, and prediction.
struct Trainer<'s> {
    session: &'s Session,
    config: Config,
    optimizer: AdamW,
}

impl<'s> Trainer<'s> {
    fn new(session: &'s Session, config: &Config, args: &Args, params: &[Param]) -> Self {
        let optimizer = AdamW::new(params, 0.9, 0.999, args.weight_decay);
        Trainer { session, config: *config, optimizer }
    }

    fn attributes(&self) -> [(&'static str, Value<'static>); 1] {
        [("feat", Value::from(self.config.feat() as i64))]
    }

    /// One optimisation step; returns the batch's loss before the update.
    fn step(
        &mut self,
        params: &mut [Param],
        batch: &Split,
        step: usize,
        lr: f64,
    ) -> Result<f32, String> {
        let mut args = vec![Value::from(batch.images.view()), Value::from(batch.labels.view())];
        args.extend(params.iter().map(|p| Value::from(p.value.view())));
        let seed = arr0(1.0f32).into_dyn();
        let (values, grads) = self
            .session
            .value_and_vjp_kw("loss", &args, &self.attributes(), &[Value::from(seed.view())])
            .map_err(|e| format!("step {step}: {e}"))?;
        let loss = into_f32(values.into_iter().next())?;
        let loss = loss.iter().next().copied().unwrap_or(f32::NAN);
        // The gradients of every f32 argument: the images' first, then the parameters'.
        if grads.len() != params.len() + 1 {
            return Err(format!("{} gradients for {} parameters", grads.len(), params.len()));
        }

        self.optimizer.update(
            self.session,
            params,
            grads.into_iter().skip(1).collect(),
            step,
            lr,
        )?;
        Ok(loss)
    }

    /// The logits of every image of `split`, from one call of `function` (`predict`, or
    /// `predict_bf16`: the same network stored and rounded in bf16).
    fn logits(
        &self,
        function: &str,
        params: &[Param],
        split: &Split,
    ) -> Result<ArrayD<f32>, String> {
        let mut args = vec![Value::from(split.images.view())];
        args.extend(params.iter().map(|p| Value::from(p.value.view())));
        let out = self
            .session
            .call_kw(function, &args, &self.attributes())
            .map_err(|e| format!("{function}: {e}"))?;
        into_f32(out.into_iter().next())
    }

    /// The fraction of `split` that `function` classifies correctly.
    fn accuracy_of(&self, function: &str, params: &[Param], split: &Split) -> Result<f64, String> {
        let logits = self.logits(function, params, split)?;
        Ok(data::correct(&logits, &split.labels) as f64 / split.len() as f64)
    }

    fn accuracy(&self, params: &[Param], split: &Split) -> Result<f64, String> {
        self.accuracy_of("predict", params, split)
    }
}
