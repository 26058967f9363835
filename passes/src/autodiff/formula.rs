//! Instantiating a `grad` block's formulas for one call site and splicing them into the
//! gradient graph.
//!
//! A `grad` block is a template like a function body, so it is lowered the same way: the
//! formulas needed at this site become the `return` of a synthesized function
//! `__vjp(<tensor inputs>, <attributes>, result, grad)` whose tensor parameters take the
//! site's dtypes and ranks (axes of static size 1 stay 1, every other axis is symbolic). The
//! resulting small graph is spliced into the gradient graph with its parameters bound to the
//! site's values ([`super::splice`]), so overload resolution, literal promotion, attribute
//! arithmetic and static checks are exactly those of ordinary lowering, and a formula that
//! does not fit the call is reported with lowering's diagnostics, pointing into the block.

use super::prim_call::{PrimCall, TensorArg};
use super::splice::splice;
use super::AutodiffError;
use tfn_ir::attr::Attr;
use tfn_ir::library::{
    Block, Body, DTypeRef, FunctionDef, GradDef, Library, ParamDef, ParamType, Stmt,
};
use tfn_ir::shape::Dim;
use tfn_ir::{instantiate, ArgSpec, DimSpec, Graph, ValueId};

/// The name the synthesized formula function is registered under in the scratch library.
const SCRATCH_NAME: &str = "__vjp";

/// The formulas of every `grad` block, instantiated on demand against a scratch copy of the
/// library (which holds the synthesized function of the site being built).
pub(crate) struct Formulas {
    scratch: Library,
}

impl Formulas {
    pub fn new(lib: &Library) -> Formulas {
        Formulas { scratch: lib.clone() }
    }

    /// Lowers the formulas of `call`'s `grad` block for the inputs in `wanted` into `graph`,
    /// with `result` and `grad` bound to the given values. Returns one gradient per wanted
    /// input (a list for a `Tensor[]` input), in the order of `wanted`, as the formulas
    /// compute them (not yet fitted to the inputs' shapes).
    pub fn apply(
        &mut self,
        graph: &mut Graph,
        call: &PrimCall,
        result: ValueId,
        grad: ValueId,
        wanted: &[String],
    ) -> Result<Vec<TensorArg>, AutodiffError> {
        let function = call.full_name();
        let overload = call.overload.as_deref();
        let not_diff = |reason: &str| AutodiffError::NotDifferentiable {
            op: function.clone(),
            reason: reason.to_string(),
        };
        let fdef = self
            .scratch
            .function(&call.name, overload)
            .ok_or_else(|| not_diff("it is not in the function library"))?;
        let gdef = self
            .scratch
            .grad_of(&call.name, overload)
            .ok_or_else(|| not_diff("it has no `grad` block"))?;
        let block = gdef.span;
        let synthesized = synthesize(fdef, gdef, call, wanted)?;
        self.scratch.functions.insert(SCRATCH_NAME.to_string(), vec![synthesized]);

        let mut specs = Vec::new();
        let mut args = Vec::new();
        for (_, t) in &call.tensors {
            match t {
                TensorArg::One(v) => {
                    specs.push(tensor_spec(graph, *v));
                    args.push(*v);
                }
                TensorArg::List(vs) => {
                    let items = vs
                        .iter()
                        .map(|v| {
                            let ty = graph.ty(*v);
                            (ty.dtype, dim_specs(&ty.shape.0))
                        })
                        .collect();
                    specs.push(ArgSpec::TensorList(items));
                    args.extend(vs);
                }
            }
        }
        specs.extend(call.attrs.iter().map(|(_, a)| ArgSpec::Attr(a.clone())));
        specs.push(tensor_spec(graph, result));
        specs.push(tensor_spec(graph, grad));
        args.extend([result, grad]);

        let instance = instantiate(&self.scratch, SCRATCH_NAME, &specs, &[])
            .map_err(|error| AutodiffError::Formula { function: function.clone(), error })?;
        let outputs = splice(graph, &instance.graph, &args, &function)?;

        let mut outputs = outputs.into_iter();
        let mut grads = Vec::new();
        for name in wanted {
            match call.tensors.iter().find(|(n, _)| n == name).map(|(_, t)| t) {
                Some(TensorArg::List(vs)) => {
                    grads.push(TensorArg::List(outputs.by_ref().take(vs.len()).collect()))
                }
                _ => grads.push(TensorArg::One(outputs.next().ok_or_else(|| {
                    AutodiffError::MissingFormula {
                        function: function.clone(),
                        input: name.clone(),
                        span: Some(block),
                    }
                })?)),
            }
        }
        Ok(grads)
    }
}

fn dim_specs(dims: &[Dim]) -> Vec<DimSpec> {
    dims.iter().map(|d| if *d == Dim::Const(1) { DimSpec::One } else { DimSpec::Dyn }).collect()
}

fn tensor_spec(graph: &Graph, v: ValueId) -> ArgSpec {
    let ty = graph.ty(v);
    ArgSpec::Tensor { dtype: ty.dtype, dims: dim_specs(&ty.shape.0) }
}

fn attr_type(a: &Attr) -> ParamType {
    match a {
        Attr::Bool(_) => ParamType::Bool,
        Attr::Int(_) => ParamType::Int,
        Attr::Float(_) => ParamType::Float,
        Attr::DType(_) => ParamType::DType,
        Attr::IntList(_) => ParamType::IntList,
        Attr::FloatList(_) => ParamType::FloatList,
    }
}

/// `fn __vjp(inputs..., attrs..., result, grad) -> (...) { return (formulas...) }`.
fn synthesize(
    fdef: &FunctionDef,
    gdef: &GradDef,
    call: &PrimCall,
    wanted: &[String],
) -> Result<FunctionDef, AutodiffError> {
    let function = call.full_name();
    let span = gdef.span;
    let param = |name: &str, ty: ParamType| ParamDef {
        name: name.to_string(),
        ty,
        default: None,
        keyword_only: false,
        span,
    };
    let mut params = Vec::new();
    for (name, t) in &call.tensors {
        let ty = match t {
            TensorArg::One(_) => ParamType::Tensor(DTypeRef::Any),
            TensorArg::List(_) => ParamType::TensorList(DTypeRef::Any),
        };
        params.push(param(name, ty));
    }
    for (name, a) in &call.attrs {
        let ty = fdef.param(name).map_or_else(|| attr_type(a), |(_, p)| p.ty.clone());
        params.push(param(name, ty));
    }
    for reserved in ["result", "grad"] {
        if params.iter().any(|p| p.name == reserved) {
            return Err(AutodiffError::NotDifferentiable {
                op: function,
                reason: format!("its parameter `{reserved}` hides the `grad` block's `{reserved}`"),
            });
        }
        params.push(param(reserved, ParamType::Tensor(DTypeRef::Any)));
    }
    let mut values = Vec::new();
    let mut returns = Vec::new();
    for name in wanted {
        let formula = gdef.formulas.iter().find(|(b, _)| &b.name == name).ok_or_else(|| {
            AutodiffError::MissingFormula {
                function: function.clone(),
                input: name.clone(),
                span: Some(span),
            }
        })?;
        // Any dtype: `fit` converts a float formula's value to its input's dtype, and refuses
        // another, naming the input and pointing at the formula.
        let ty = match call.tensors.iter().find(|(n, _)| n == name).map(|(_, t)| t) {
            Some(TensorArg::One(_)) => ParamType::Tensor(DTypeRef::Any),
            Some(TensorArg::List(_)) => ParamType::TensorList(DTypeRef::Any),
            None => {
                return Err(AutodiffError::MissingFormula {
                    function: function.clone(),
                    input: name.clone(),
                    span: Some(span),
                })
            }
        };
        values.push(formula.1.clone());
        returns.push(ty);
    }
    let body = Block { stmts: vec![Stmt::Return { values, span }] };
    Ok(FunctionDef {
        name: SCRATCH_NAME.to_string(),
        overload: None,
        type_params: Vec::new(),
        params,
        returns,
        body: Body::Composed(body),
        span,
        name_span: span,
    })
}
