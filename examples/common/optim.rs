//! AdamW over a model's parameters: the moment estimates, kept between steps, and one call of
//! std:optim's `adamw` per parameter (a fused kernel with three results).

use super::params::{into_f32, Param};
use ndarray::{arr0, ArrayD};
use tfn::{Session, Value};

pub struct AdamW {
    pub beta1: f64,
    pub beta2: f64,
    /// The decoupled weight decay of the parameters that decay (`Param::decays`).
    pub weight_decay: f64,
    /// The moment estimates `(m, v)`, one pair per parameter.
    moments: Vec<(ArrayD<f32>, ArrayD<f32>)>,
}

impl AdamW {
    /// Zero moments for `params`.
    pub fn new(params: &[Param], beta1: f64, beta2: f64, weight_decay: f64) -> AdamW {
        let moments = params
            .iter()
            .map(|p| (ArrayD::zeros(p.value.raw_dim()), ArrayD::zeros(p.value.raw_dim())))
            .collect();
        AdamW { beta1, beta2, weight_decay, moments }
    }

    /// Updates every parameter with its gradient (`grads` in the parameters' order) for step
    /// `step` (from 1) at learning rate `lr`. `session` must have loaded std:optim.
    pub fn update(
        &mut self,
        session: &Session,
        params: &mut [Param],
        grads: Vec<Value<'static>>,
        step: usize,
        lr: f64,
    ) -> Result<(), String> {
        if grads.len() != params.len() || params.len() != self.moments.len() {
            return Err(format!("{} gradients for {} parameters", grads.len(), params.len()));
        }
        // Rank-0 tensors, not attributes: a new step is a new value, not a new compile.
        let lr_t = arr0(lr as f32).into_dyn();
        let bc1 = arr0((1.0 - self.beta1.powi(step as i32)) as f32).into_dyn();
        let bc2 = arr0((1.0 - self.beta2.powi(step as i32)) as f32).into_dyn();
        for ((p, g), (m, v)) in params.iter_mut().zip(grads).zip(&mut self.moments) {
            let g = into_f32(Some(g))?;
            let decay = if p.decays { self.weight_decay } else { 0.0 };
            let args = [
                Value::from(p.value.view()),
                Value::from(g.view()),
                Value::from(m.view()),
                Value::from(v.view()),
                Value::from(lr_t.view()),
                Value::from(bc1.view()),
                Value::from(bc2.view()),
            ];
            let kwargs = [
                ("beta1", Value::from(self.beta1)),
                ("beta2", Value::from(self.beta2)),
                ("decay", Value::from(decay)),
            ];
            let mut out = session
                .call_kw("adamw", &args, &kwargs)
                .map_err(|e| format!("adamw of `{}`: {e}", p.name))?
                .into_iter();
            p.value = into_f32(out.next())?;
            *m = into_f32(out.next())?;
            *v = into_f32(out.next())?;
        }
        Ok(())
    }
}
