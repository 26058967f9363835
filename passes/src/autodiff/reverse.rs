//! The reverse sweep: seeds the outputs with the cotangent parameters, walks the forward nodes
//! from last to first, and pushes each node's gradient to its inputs through the node's
//! `grad` block (or, for an inlined call with a custom `grad` block, through that block).

use super::concat::concat_grads;
use super::fit::{accumulate, fit, keep_gradients_wide};
use super::formula::Formulas;
use super::prim_call::{prim_call, PrimCall, TensorArg};
use super::prune::prune;
use super::regions::{custom_regions, renumber_regions};
use super::{AutodiffError, Vjp};
use tfn_ir::graph::{GraphParam, Origin};
use tfn_ir::lower::CallRegion;
use tfn_ir::Instance;
use tfn_ir::{Graph, Library, Op, ValueId};

/// The vector-Jacobian product of a lowered function (see the [module docs](super)); the
/// instance's call regions make custom `grad` blocks of inlined functions win.
pub fn vjp(lib: &Library, forward: &Instance) -> Result<Vjp, AutodiffError> {
    refuse_loops(forward)?;
    vjp_graph(lib, &forward.graph, &forward.regions)
}

/// A function with loops is not one graph (its loops' results are parameters of its outer
/// graph): it is differentiated step by step, by the session's program runtime.
fn refuse_loops(forward: &Instance) -> Result<(), AutodiffError> {
    if forward.has_loops() {
        return Err(AutodiffError::NotDifferentiable {
            op: forward.function.clone(),
            reason: "it has loops, which are differentiated step by step (`Session::vjp`), not as one graph".into(),
        });
    }
    Ok(())
}

/// The vector-Jacobian product of `forward`, with the custom-VJP `regions` lowering recorded
/// for it (`&[]` to derive every gradient from the graph). For a second derivative, pass a
/// [`Vjp`]'s own `graph` and `regions`.
pub fn vjp_graph(
    lib: &Library,
    forward: &Graph,
    regions: &[CallRegion],
) -> Result<Vjp, AutodiffError> {
    build(lib, forward, regions, false)
}

/// Like [`vjp`], but the graph also returns the forward results, before the gradients
/// (`jax.value_and_grad`'s shape): one pass computes both, sharing the forward values.
pub fn value_and_vjp(lib: &Library, forward: &Instance) -> Result<Vjp, AutodiffError> {
    refuse_loops(forward)?;
    build(lib, &forward.graph, &forward.regions, true)
}

/// [`value_and_vjp`] of a graph (with its custom-VJP regions).
pub fn value_and_vjp_graph(
    lib: &Library,
    forward: &Graph,
    regions: &[CallRegion],
) -> Result<Vjp, AutodiffError> {
    build(lib, forward, regions, true)
}

fn build(
    lib: &Library,
    forward: &Graph,
    regions: &[CallRegion],
    with_values: bool,
) -> Result<Vjp, AutodiffError> {
    if !forward.params.iter().any(|p| p.ty.dtype.is_float()) {
        let function = forward.name.clone();
        let named: Vec<String> =
            forward.params.iter().map(|p| format!("`{}` is {}", p.name, p.ty.dtype)).collect();
        let arguments = match named.as_slice() {
            [] => "it has no `Tensor` argument".to_string(),
            [one] => one.clone(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
        };
        return Err(AutodiffError::NothingToDifferentiate { function, arguments });
    }
    let mut graph = forward.clone();
    graph.name = format!("{}_vjp", forward.name);
    let forward_len = forward.nodes.len();
    let needs = needs_gradient(forward);

    // One cotangent parameter per output, typed like it.
    let mut grads: Vec<Option<ValueId>> = vec![None; forward_len];
    for (k, &out) in forward.outputs.iter().enumerate() {
        let ty = forward.ty(out).clone();
        let index = graph.params.len() as u32;
        graph.params.push(GraphParam { name: format!("cotangent{k}"), ty: ty.clone() });
        let cot = graph.push(Op::Param(index), Vec::new(), ty, Origin::default());
        if needs.get(out.index()).copied().unwrap_or(false) {
            let origin = forward.node(out).origin.clone();
            accumulate(&mut graph, &mut grads[out.index()], cot, &origin)?;
        }
    }

    let mut formulas = Formulas::new(lib);
    let custom = custom_regions(regions, forward_len);
    let mut skip = vec![false; forward_len];
    for r in &custom {
        for i in r.body.clone() {
            skip[i] = true;
        }
    }
    for i in (0..forward_len).rev() {
        let node = ValueId(i as u32);
        if let Some(r) = custom.iter().find(|r| r.anchor == i) {
            let call = r.call.clone();
            let outs: Vec<Option<ValueId>> =
                r.outputs.iter().map(|o| grads.get(o.index()).copied().flatten()).collect();
            propagate(&mut graph, &mut formulas, &needs, &mut grads, &call, &r.outputs, &outs)?;
            continue;
        }
        if skip[i] || !needs[i] {
            continue;
        }
        let Some(g) = grads[i] else { continue };
        if let Op::Concat { axis } = forward.node(node).op {
            let xs = forward.node(node).inputs.clone();
            let origin = forward.node(node).origin.clone();
            let pieces = concat_grads(&mut graph, &xs, axis, g, &origin)?;
            for (x, piece) in xs.into_iter().zip(pieces) {
                if needs[x.index()] {
                    let target = graph.ty(x).clone();
                    let piece = fit(&mut graph, piece, &target, &origin, ("concat", "xs"))?;
                    accumulate(&mut graph, &mut grads[x.index()], piece, &origin)?;
                }
            }
            continue;
        }
        let Some(call) = prim_call(lib, forward, node) else { continue };
        propagate(&mut graph, &mut formulas, &needs, &mut grads, &call, &[node], &[Some(g)])?;
    }

    // Gradients of the float parameters, in parameter order.
    let mut differentiated = Vec::new();
    let mut unreached = Vec::new();
    let mut outputs = if with_values { forward.outputs.clone() } else { Vec::new() };
    for (p, param) in forward.params.iter().enumerate() {
        if !param.ty.dtype.is_float() {
            continue;
        }
        let mut total = None;
        let param_nodes =
            forward.nodes.iter().enumerate().filter(|(_, n)| n.op == Op::Param(p as u32));
        for (i, n) in param_nodes {
            if let Some(g) = grads[i] {
                accumulate(&mut graph, &mut total, g, &n.origin)?;
            }
        }
        let g = match total {
            Some(g) => g,
            None => {
                unreached.push(p);
                zeros_like_param(&mut graph, p, &param.ty)
            }
        };
        differentiated.push(p);
        outputs.push(g);
    }
    graph.outputs = outputs;
    keep_gradients_wide(&mut graph, forward_len);
    let (graph, renumber) = prune(graph);
    tfn_ir::verify(&graph).map_err(AutodiffError::Invalid)?;
    let regions = renumber_regions(regions, &renumber);
    let values = if with_values { forward.outputs.len() } else { 0 };
    Ok(Vjp { graph, differentiated, regions, values, unreached })
}

/// Pushes the gradients `out_grads` of a call's results `results` to its inputs.
fn propagate(
    graph: &mut Graph,
    formulas: &mut Formulas,
    needs: &[bool],
    grads: &mut [Option<ValueId>],
    call: &PrimCall,
    results: &[ValueId],
    out_grads: &[Option<ValueId>],
) -> Result<(), AutodiffError> {
    let needed = |v: &ValueId| needs.get(v.index()).copied().unwrap_or(false);
    let wanted: Vec<String> = call
        .tensors
        .iter()
        .filter(|(_, t)| t.values().iter().any(needed))
        .map(|(n, _)| n.clone())
        .collect();
    if wanted.is_empty() || out_grads.iter().all(Option::is_none) {
        return Ok(());
    }
    let (&[result], &[Some(grad)]) = (results, out_grads) else {
        return Err(AutodiffError::NotDifferentiable {
            op: call.full_name(),
            reason: "custom `grad` blocks of functions with several results are not supported"
                .into(),
        });
    };
    let origin = graph.node(result).origin.clone();
    let function = call.full_name();
    let contributions = formulas.apply(graph, call, result, grad, &wanted)?;
    for (name, contribution) in wanted.iter().zip(contributions) {
        let Some((_, input)) = call.tensors.iter().find(|(n, _)| n == name) else { continue };
        let pairs: Vec<(ValueId, ValueId)> =
            input.values().into_iter().zip(contribution.values()).collect();
        if let (TensorArg::List(xs), TensorArg::List(gs)) = (input, &contribution) {
            if xs.len() != gs.len() {
                return Err(AutodiffError::ShapeMismatch {
                    function,
                    input: name.clone(),
                    got: format!("a list of {} tensors", gs.len()),
                    want: format!("a list of {}", xs.len()),
                    span: origin.span,
                });
            }
        }
        for (x, g) in pairs {
            if !needed(&x) {
                continue;
            }
            let target = graph.ty(x).clone();
            let g = fit(graph, g, &target, &origin, (&function, name))?;
            accumulate(graph, &mut grads[x.index()], g, &origin)?;
        }
    }
    Ok(())
}

/// Which values carry a gradient: float values computed from a float parameter through ops
/// that are not constant in their inputs.
fn needs_gradient(graph: &Graph) -> Vec<bool> {
    let mut needs = vec![false; graph.nodes.len()];
    for (i, node) in graph.nodes.iter().enumerate() {
        let float = node.ty.dtype.is_float();
        needs[i] = float
            && match node.op {
                Op::Param(_) => true,
                Op::Const(_)
                | Op::Full { .. }
                | Op::Iota { .. }
                | Op::ArgMax { .. }
                | Op::ArgMin { .. }
                | Op::Random { .. } => false,
                _ => node.inputs.iter().any(|v| needs.get(v.index()).copied().unwrap_or(false)),
            };
    }
    needs
}

/// A zero gradient for parameter `p` (which no output depends on).
fn zeros_like_param(graph: &mut Graph, p: usize, ty: &tfn_ir::TensorType) -> ValueId {
    let param =
        graph.nodes.iter().position(|n| n.op == Op::Param(p as u32)).map(|i| ValueId(i as u32));
    let value = tfn_ir::Scalar::Float(0.0);
    let inputs = param.map_or_else(Vec::new, |v| vec![v]);
    graph.push(Op::Full { value }, inputs, ty.clone(), Origin::default())
}
