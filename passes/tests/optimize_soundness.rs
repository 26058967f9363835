//! Every built-in rewrite rule, checked for soundness with the interpreter on its probes
//! (random inputs, several shapes including broadcasting pairs, every dtype the probe
//! type-checks with). A rule that never fires on one of its probes fails too.

use tfn_passes::optimize::check_rule_soundness;
use tfn_passes::optimize::rules::{builtin_defs, compile};
use tfn_passes::optimize::soundness::SoundnessConfig;

#[test]
fn every_builtin_rule_is_sound_on_its_probes() {
    let config = SoundnessConfig::default();
    let mut failures = Vec::new();
    let mut total_cases = 0;
    for def in builtin_defs() {
        let rewrite = compile(def).unwrap_or_else(|e| panic!("{e}"));
        let probes: Vec<String> = def.probes.iter().map(|p| p.to_string()).collect();
        match check_rule_soundness(def.name, &rewrite, &probes, &config) {
            Ok(stats) => total_cases += stats.cases,
            Err(e) => failures.push(e.to_string()),
        }
    }
    assert!(failures.is_empty(), "{} rule(s) failed:\n{}", failures.len(), failures.join("\n\n"));
    assert!(total_cases >= builtin_defs().len(), "only {total_cases} cases checked");
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
