//! [`Instantiated`]: a function prepared for one call signature, called without the cache
//! lookup — TensorFlow's `FunctionLibraryRuntime::Instantiate` then `Run`, for hot loops.

use crate::error::Error;
use crate::session::{guards_hold, Session};
use crate::signature::{CallKind, Prepared};
use crate::value::{OutputMut, Value};
use std::sync::Arc;

/// A handle from [`Session::instantiate`]. Each call checks (cheaply) that its arguments have
/// the signature the handle was instantiated for — dtypes, ranks, which axes are 1,
/// contiguity and attribute values — and fails with [`Error::Signature`] otherwise; sizes may
/// change freely. (A function specialised on a derived size being 1 — see
/// [`tfn_ir::SizeGuards`] — takes the session's path when a call's sizes break that.)
pub struct Instantiated<'s> {
    pub(crate) session: &'s Session,
    pub(crate) prepared: Arc<Prepared>,
}

impl Instantiated<'_> {
    fn check(&self, args: &[Value], kwargs: &[(&str, Value)]) -> Result<(), Error> {
        if self.prepared.key.matches(CallKind::Call, args, kwargs) {
            Ok(())
        } else {
            let got = crate::signature::CallKey::new(
                CallKind::Call,
                self.prepared.key.name(),
                args,
                kwargs,
            );
            Err(Error::Signature { expected: self.prepared.key.to_string(), got: got.to_string() })
        }
    }

    pub fn call(&self, args: &[Value]) -> Result<Vec<Value<'static>>, Error> {
        self.call_kw(args, &[])
    }

    pub fn call_kw(
        &self,
        args: &[Value],
        kwargs: &[(&str, Value)],
    ) -> Result<Vec<Value<'static>>, Error> {
        self.check(args, kwargs)?;
        if !guards_hold(&self.prepared, args, kwargs) {
            return self.session.call_kw(self.prepared.key.name(), args, kwargs);
        }
        let outputs = self
            .prepared
            .call(args, kwargs, self.session.externs())
            .map_err(|e| self.session.explain(e, self.prepared.key.name(), args, kwargs))?;
        Ok(outputs.into_iter().map(Value::from).collect())
    }

    pub fn call_into(&self, args: &[Value], outputs: &mut [OutputMut]) -> Result<(), Error> {
        self.call_into_kw(args, &[], outputs)
    }

    pub fn call_into_kw(
        &self,
        args: &[Value],
        kwargs: &[(&str, Value)],
        outputs: &mut [OutputMut],
    ) -> Result<(), Error> {
        self.check(args, kwargs)?;
        if !guards_hold(&self.prepared, args, kwargs) {
            return self.session.call_into_kw(self.prepared.key.name(), args, kwargs, outputs);
        }
        self.prepared
            .call_into(args, kwargs, outputs, self.session.externs())
            .map_err(|e| self.session.explain(e, self.prepared.key.name(), args, kwargs))
    }
}
