//! AOT objects (`tfn_backend::aot`): an object of a planned function is a relocatable ELF file
//! whose kernels are deduplicated as the JIT's, once per CPU tier in a portable object; the
//! runtime's schedule takes exactly the object's kernels, and a table whose fingerprints or
//! count do not match the plans is an error, never a call (loop kernels and scans alike);
//! functions whose steps the interpreter runs are refused; the tier choice and the function
//! metadata. (Linking and calling an object: the root crate's `tests/cli/aot.rs`.)

use tfn_backend::aot::{choose_tier, AotError, CpuChoice, FunctionMeta, ObjectBuilder};
use tfn_backend::{CodegenError, CompileOptions, CompiledFunction, SimdLevel};
use tfn_ir::text::parse_graph;
use tfn_passes::fusion::fuse;

const GELU: &str = "func gelu(x: f32[s0, s1]) -> (f32[s0, s1]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1)
  %0 = param 0 : f32[s0, s1]
  %1 = const 0.5 : f32[]
  %2 = mul %0, %1 : f32[s0, s1]
  %3 = tanh %0 : f32[s0, s1]
  %4 = mul_add %2, %3, %2 : f32[s0, s1]
  %5 = sum %4 {axes=[1], keepdim=true} : f32[s0, 1]
  %6 = div %4, %5 : f32[s0, s1]
  return %6
}
";

const SCAN: &str = "func running(x: f32[s0]) -> (f32[s0]) {
  sym s0 = input(param 0 axis 0)
  %0 = param 0 : f32[s0]
  %1 = cumsum %0 {axis=0, exclusive=false, reverse=false} : f32[s0]
  return %1
}
";

fn meta(name: &str) -> FunctionMeta {
    FunctionMeta { name: name.into(), params: vec![("x".into(), vec![None, Some(7)])] }
}

#[test]
fn an_object_holds_the_kernels_and_the_runtime_checks_every_one() {
    let graph = parse_graph(GELU).expect("graph parses");
    let mut object =
        ObjectBuilder::new("t", &CpuChoice::Host(SimdLevel::V128)).expect("object module");
    object.add_function(&meta("gelu"), &graph, fuse(&graph)).expect("gelu builds");
    // The same function again: its kernels are the first one's (code-identity dedup).
    object.add_function(&meta("gelu2"), &graph, fuse(&graph)).expect("gelu builds twice");
    let fps = object.fingerprints(0);
    assert!(!fps.is_empty());
    assert_eq!(fps, object.fingerprints(1));
    assert_eq!(object.kernel_count(), fps.len(), "identical kernels are defined once");
    let bytes = object.finish().expect("object emitted");
    assert_eq!(&bytes[..4], b"\x7fELF", "a relocatable ELF object");
    // A portable object: every kernel once per tier, the same plans (fingerprints).
    let mut portable = ObjectBuilder::new("p", &CpuChoice::Portable).expect("object module");
    portable.add_function(&meta("gelu"), &graph, fuse(&graph)).expect("gelu builds");
    assert_eq!(portable.fingerprints(0), fps);
    assert_eq!(portable.kernel_count(), fps.len() * tfn_backend::aot::TIERS.len());
    assert!(portable.finish().is_ok());
    assert_eq!(CpuChoice::parse("x86-64-v3"), Some(CpuChoice::Tier(tfn_backend::aot::TIERS[1])));
    assert_eq!(CpuChoice::parse("x86-64-v4"), None);

    // The runtime's side: the planned graph's text read back and fused again takes exactly
    // these kernels (the addresses are never called here).
    let again = parse_graph(&tfn_ir::text::print_graph(&graph)).expect("text reads back");
    let dummy = 0x1000 as *const u8;
    let table: Vec<(*const u8, u64)> = fps.iter().map(|&fp| (dummy, fp)).collect();
    let options = CompileOptions::default();
    // SAFETY (all calls below): nothing is run; only the schedule is assembled.
    let ok = unsafe { CompiledFunction::from_object(&again, fuse(&again), &table, &options) };
    assert!(ok.is_ok(), "matching table: {:?}", ok.err());
    let mut wrong = table.clone();
    wrong[0].1 ^= 1;
    let e = unsafe { CompiledFunction::from_object(&again, fuse(&again), &wrong, &options) };
    assert!(
        matches!(&e, Err(CodegenError::Internal(m)) if m.contains("fingerprint")),
        "{:?}",
        e.err()
    );
    let short = &table[..table.len() - 1];
    let e = unsafe { CompiledFunction::from_object(&again, fuse(&again), short, &options) };
    assert!(matches!(e, Err(CodegenError::Internal(_))), "a table too short");
    let mut long = table.clone();
    long.push(table[0]);
    let e = unsafe { CompiledFunction::from_object(&again, fuse(&again), &long, &options) };
    assert!(matches!(e, Err(CodegenError::Internal(_))), "a table too long");
    let null: Vec<(*const u8, u64)> = fps.iter().map(|&fp| (std::ptr::null(), fp)).collect();
    let e = unsafe { CompiledFunction::from_object(&again, fuse(&again), &null, &options) };
    assert!(matches!(e, Err(CodegenError::Internal(_))), "a null kernel");
}

const INT_MATMUL: &str = "func imm(a: i32[s0, s1], b: i32[s1, s2]) -> (i32[s0, s2]) {
  sym s0 = input(param 0 axis 0)
  sym s1 = input(param 0 axis 1, param 1 axis 0)
  sym s2 = input(param 1 axis 1)
  %0 = param 0 : i32[s0, s1]
  %1 = param 1 : i32[s1, s2]
  %2 = matmul %0, %1 : i32[s0, s2]
  return %2
}
";

#[test]
fn scans_are_object_kernels_and_interpreted_steps_are_refused() {
    // A scan's kernel (its own code generator) is a kernel of the object, fingerprinted.
    let graph = parse_graph(SCAN).expect("graph parses");
    let mut object =
        ObjectBuilder::new("t", &CpuChoice::Host(SimdLevel::V128)).expect("object module");
    object.add_function(&meta("running"), &graph, fuse(&graph)).expect("a scan builds");
    let fps = object.fingerprints(0);
    assert_eq!(fps.len(), 1);
    let table = [(0x1000 as *const u8, fps[0])];
    let options = CompileOptions::default();
    // SAFETY (all calls below): nothing is run; only the schedule is assembled.
    let ok = unsafe { CompiledFunction::from_object(&graph, fuse(&graph), &table, &options) };
    assert!(ok.is_ok(), "{:?}", ok.err());
    let wrong = [(0x1000 as *const u8, fps[0] ^ 1)];
    let e = unsafe { CompiledFunction::from_object(&graph, fuse(&graph), &wrong, &options) };
    assert!(matches!(&e, Err(CodegenError::Internal(m)) if m.contains("fingerprint")));
    // An integer GEMM runs in the interpreter: refused at build time and by the runtime.
    let graph = parse_graph(INT_MATMUL).expect("graph parses");
    match object.add_function(&meta("imm"), &graph, fuse(&graph)) {
        Err(AotError::Unsupported(why)) => assert!(why.contains("kernel 0"), "{why}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let e = unsafe { CompiledFunction::from_object(&graph, fuse(&graph), &[], &options) };
    assert!(matches!(e, Err(CodegenError::Unsupported(_))), "{:?}", e.err());
}

#[test]
fn tier_choice_and_function_metadata() {
    let info = "tier a simd=128 isa=\ntier b simd=128 isa=has_teleport\ntier c simd=avx9000\n";
    // The widest tier this CPU runs (tiers are written narrowest first).
    assert_eq!(choose_tier(info, None), Ok((0, "a".to_string())));
    assert_eq!(choose_tier("tier a simd=128 isa=\ntier b isa=\n", None), Ok((1, "b".into())));
    // `TFN_RT_TIER`: that tier or an error naming what is missing.
    assert!(choose_tier(info, Some("b")).unwrap_err().contains("has_teleport"));
    assert!(choose_tier(info, Some("c")).unwrap_err().contains("avx9000"));
    assert!(choose_tier(info, Some("d")).unwrap_err().contains("no such tier"));
    assert!(choose_tier("", None).is_err());
    // Every x86-64 machine that runs these tests has the baseline tier.
    let v2 = tfn_backend::aot::TIERS[0];
    let line = tfn_backend::aot::tier_line(
        v2.name,
        v2.simd,
        &v2.flags.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
    );
    if cfg!(target_arch = "x86_64") {
        assert_eq!(choose_tier(&line, None), Ok((0, "x86-64-v2".to_string())));
    }
    let m = meta("gelu");
    let blob = format!("{}graph\nfunc ...", m.to_text());
    let (back, graph) = FunctionMeta::parse_blob(&blob).expect("blob parses");
    assert_eq!(back, m);
    assert_eq!(graph, tfn_backend::aot::BlobBody::Graph("func ..."));
    // A function named `graph` is not its body's start; a program's body is.
    let m = meta("graph");
    let blob = format!("{}program\nprogram inputs=1", m.to_text());
    let (back, body) = FunctionMeta::parse_blob(&blob).expect("blob parses");
    assert_eq!(back, m);
    assert_eq!(body, tfn_backend::aot::BlobBody::Program("program inputs=1"));
    let blob = format!("{}program vjp\nprogram inputs=1", m.to_text());
    let (_, body) = FunctionMeta::parse_blob(&blob).expect("blob parses");
    assert_eq!(body, tfn_backend::aot::BlobBody::ProgramVjp("program inputs=1"));
    assert!(FunctionMeta::parse_blob("fn f\n").is_err(), "no graph");
    assert!(FunctionMeta::parse_blob("param x [?,q]\ngraph\n").is_err(), "bad size");
}

/// A vjp's stage payloads (`gradient ...` and three parts) that do not read back are errors
/// naming what is wrong, never a panic or a wrong call.
#[test]
fn damaged_gradient_payloads_are_errors() {
    use tfn_ir::program::run::{Plan, PlanStep};
    use tfn_ir::ValueId;
    let signature = parse_graph(SCAN).expect("graph parses");
    let result = signature.ty(signature.outputs[0]).clone();
    let cases = [
        ("gradient results x differentiated 0\n", "bad gradient stage"),
        ("gradient results 1 differentiated z\n", "bad gradient stage"),
        ("gradient results 1 differentiated 0\n", "without its parts"),
        ("gradient results 1 differentiated 0\npart 99\nabc\n", "truncated"),
        ("gradient results 1 differentiated 0\npart 3\nabc\n", "kernel count"),
        ("gradient results 1 differentiated 0\npart 10\nkernels 5\n\n", "more than the object"),
    ];
    for (payload, message) in cases {
        let plan = Plan {
            signature: signature.clone(),
            param_values: vec![ValueId(0)],
            steps: vec![PlanStep::Stage {
                stage: payload.to_string(),
                reads: vec![],
                writes: vec![ValueId(1)],
            }],
            outputs: vec![ValueId(1)],
            values: 2,
        };
        let text =
            tfn_ir::program::text::print_plan(&plan, std::slice::from_ref(&result), &mut |s| {
                s.clone()
            });
        // SAFETY: the table is empty: nothing is called.
        let loaded =
            unsafe { tfn_backend::aot::load_program(&text, &[], &CompileOptions::default()) };
        match loaded {
            Err(e) => assert!(e.contains(message), "{payload:?}: {e}"),
            Ok(_) => panic!("{payload:?} loaded"),
        }
    }
}
