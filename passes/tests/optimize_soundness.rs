//! Every built-in rewrite rule, checked for soundness with the interpreter on its probes
//! (random inputs, several shapes including broadcasting pairs, every dtype the probe
//! type-checks with), values and — with the prelude's `grad` blocks — gradients. A rule that
//! never fires on one of its probes fails too. A user rule whose sides agree in value but not
//! in gradient (under a deliberately wrong `grad neg`) is rejected with `E0702`.

use tfn_ir::{Diagnostic, Library};
use tfn_passes::optimize::check_rule_soundness;
use tfn_passes::optimize::rules::{builtin_defs, compile};
use tfn_passes::optimize::soundness::check_rule_soundness_with;
use tfn_passes::optimize::soundness::SoundnessConfig;
use tfn_passes::optimize::user_rules::compile_user_rules;

#[test]
fn every_builtin_rule_is_sound_on_its_probes() {
    let config = SoundnessConfig::default();
    let prelude = tfn_frontend::prelude().unwrap_or_else(|d| panic!("{d:?}"));
    let mut failures = Vec::new();
    let (mut total_cases, mut gradient_comparisons) = (0, 0);
    for def in builtin_defs() {
        let rewrite = compile(def).unwrap_or_else(|e| panic!("{e}"));
        let probes: Vec<String> = def.probes.iter().map(|p| p.to_string()).collect();
        match check_rule_soundness_with(def.name, &rewrite, &probes, &config, Some(&prelude)) {
            Ok(stats) => {
                total_cases += stats.cases;
                gradient_comparisons += stats.gradient_comparisons;
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    assert!(failures.is_empty(), "{} rule(s) failed:\n{}", failures.len(), failures.join("\n\n"));
    assert!(total_cases >= builtin_defs().len(), "only {total_cases} cases checked");
    assert!(gradient_comparisons >= total_cases / 4, "only {gradient_comparisons} gradients");
}

/// Loads `rules` into the prelude with `grad neg` replaced by `grad_neg`, then compiles them.
fn compile_with_neg_grad(grad_neg: &str, rules: &str) -> Result<usize, Vec<Diagnostic>> {
    use tfn_frontend::{load_source, MemLoader, PRELUDE, PRELUDE_GRADS};
    let correct = "grad neg(x) {\n    x: -grad\n}";
    assert!(PRELUDE_GRADS.contains(correct), "the prelude's `grad neg` changed");
    let grads = PRELUDE_GRADS.replace(correct, grad_neg);
    let mut lib = Library::default();
    let loader = MemLoader::new();
    let load = |lib: &mut Library, name: &str, text: &str| {
        load_source(lib, name, text, &loader).unwrap_or_else(|d| panic!("{name}: {d:?}"));
    };
    load(&mut lib, "<prelude>", PRELUDE);
    load(&mut lib, "<prelude-grads>", &grads);
    load(&mut lib, "rules.tfn", rules);
    compile_user_rules(&lib).map(|rules| rules.len())
}

#[test]
fn a_rule_whose_gradients_differ_is_rejected() {
    let rule = "rewrite double-negation: neg(neg(?x)) => ?x\n";
    // With the true gradient, d/dx -(-x) = 1 on both sides.
    assert_eq!(compile_with_neg_grad("grad neg(x) {\n    x: -grad\n}", rule), Ok(1));
    // With `grad neg` doubling instead, the left side's gradient is 4 * grad, the right's grad.
    let wrong = compile_with_neg_grad("grad neg(x) {\n    x: grad * 2.0\n}", rule);
    let diags = wrong.expect_err("the rule's gradients differ");
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].code, "E0702");
    let notes = diags[0].notes.join("\n");
    assert!(notes.contains("gradients differ"), "{notes}");
    assert!(notes.contains("cotangent") && notes.contains("gradient for ?x"), "{notes}");
}

#[test]
fn the_checker_rejects_a_rule_without_its_domain_condition() {
    use tfn_passes::optimize::rules::{rule, Rhs};
    use tfn_passes::optimize::SoundnessError;
    // `exp(log(x)) -> x` without `Positive(?x)`: wrong for every negative x.
    let unguarded = rule("exp-log-unguarded", "(exp (log ?x))", Rhs::Pattern("?x"), &[], &[]);
    let rewrite = compile(&unguarded).unwrap_or_else(|e| panic!("{e}"));
    let probes = ["(exp (log ?x))".to_string()];
    match check_rule_soundness(unguarded.name, &rewrite, &probes, &SoundnessConfig::default()) {
        Err(SoundnessError::Unsound(cx)) => {
            assert_eq!(cx.rule, "exp-log-unguarded");
            assert!(cx.to_string().contains("left-hand side gives"), "{cx}");
        }
        other => panic!("expected a counterexample, got {other:?}"),
    }
}
