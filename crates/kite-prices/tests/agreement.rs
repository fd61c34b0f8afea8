//! kite's prices against the `genai-prices` package's own calculator (run in Python, from
//! the same release as the snapshot) for every recorded case with usage: the same usage,
//! model, provider and time must give the same dollars, and an unknown model no price on
//! either side.

use kite_core::Usage;
use kite_prices::{PriceTable, call_cost};
use kite_testkit::mcp;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// 2026-11-01 12:00 UTC: both sides price at the same moment.
const AT_UNIX: u64 = 1_793_534_400;

struct Case {
    name: String,
    provider: &'static str,
    model: String,
    usage: Usage,
}

fn recorded_cases() -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wire");
    let mut out = Vec::new();
    for provider in ["openai", "anthropic", "mistral", "openrouter", "groq"] {
        let Ok(apis) = std::fs::read_dir(root.join(provider)) else {
            continue;
        };
        for api in apis.flatten() {
            let Ok(cases) = std::fs::read_dir(api.path()) else {
                continue;
            };
            for case in cases.flatten() {
                let Ok(text) = std::fs::read_to_string(case.path().join("expected.json")) else {
                    continue;
                };
                let expected: Value = serde_json::from_str(&text).unwrap();
                let response = &expected["response"];
                let (Some(model), Some(usage)) =
                    (response["model"].as_str(), response.get("usage"))
                else {
                    continue;
                };
                let usage: Usage = serde_json::from_value(usage.clone()).unwrap();
                if usage.input_tokens == 0 && usage.output_tokens == 0 {
                    continue;
                }
                out.push(Case {
                    name: format!("{provider}/{}", case.path().display()),
                    provider,
                    model: model.to_owned(),
                    usage,
                });
            }
        }
    }
    out
}

/// Usages no recording has: cache writes, cache reads with writes, a tier's worth of input.
fn written_cases() -> Vec<Case> {
    let usage = |input, cached, written, output| Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        cache_write_tokens: written,
        output_tokens: output,
        total_tokens: input + output,
        ..Usage::default()
    };
    [
        (
            "anthropic",
            "claude-sonnet-4-5",
            usage(5000, 1000, 2000, 300),
        ),
        ("anthropic", "claude-haiku-4-5", usage(12000, 0, 12000, 50)),
        ("anthropic", "claude-opus-4-1", usage(900, 800, 0, 10)),
        (
            "anthropic",
            "claude-sonnet-4-5",
            usage(300_000, 100_000, 50_000, 2000),
        ),
        ("openai", "gpt-4o", usage(10_000, 4096, 0, 500)),
        ("openai", "gpt-4.1-mini", usage(2000, 1024, 0, 100)),
        ("mistral", "mistral-large-latest", usage(3000, 0, 0, 400)),
        ("groq", "llama-3.3-70b-versatile", usage(3000, 0, 0, 400)),
        (
            "openrouter",
            "anthropic/claude-sonnet-4.5",
            usage(4000, 1000, 1000, 200),
        ),
    ]
    .into_iter()
    .map(|(provider, model, usage)| Case {
        name: format!("written {provider} {model}"),
        provider,
        model: model.to_owned(),
        usage,
    })
    .collect()
}

const CALCULATOR: &str = r#"
import json, sys
from datetime import datetime, timezone
import genai_prices
from genai_prices import Usage, calc_price

cases = json.load(sys.stdin)
at = datetime.fromtimestamp(cases["at"], tz=timezone.utc)
out = []
for c in cases["cases"]:
    usage = Usage(input_tokens=c["input"], output_tokens=c["output"],
                  cache_read_tokens=c["cached"] or None,
                  cache_write_tokens=c["written"] or None,
                  output_reasoning_tokens=c["reasoning"] or None)
    try:
        p = calc_price(usage, model_ref=c["model"], provider_id=c["provider"], genai_request_timestamp=at)
        out.append(str(p.total_price))
    except LookupError:
        out.append(None)
print(json.dumps({"version": genai_prices.__version__ if hasattr(genai_prices, "__version__") else None, "prices": out}))
"#;

#[test]
fn kite_prices_every_recorded_case_as_genai_prices_does() {
    let mut cases = recorded_cases();
    assert!(
        cases.len() >= 50,
        "only {} recorded cases with usage",
        cases.len()
    );
    let recorded = cases.len();
    cases.extend(written_cases());
    let table = PriceTable::snapshot();
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(AT_UNIX);
    let input = json!({
        "at": AT_UNIX,
        "cases": cases.iter().map(|c| json!({
            "provider": kite_prices::provider_id(c.provider),
            "model": c.model,
            "input": c.usage.input_tokens,
            "output": c.usage.output_tokens,
                        "cached": c.usage.cached_input_tokens,
            "written": c.usage.cache_write_tokens,
            "reasoning": c.usage.reasoning_tokens,
        })).collect::<Vec<_>>(),
    });
    let mut child = std::process::Command::new(mcp::python())
        .args(["-c", CALCULATOR])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python with genai-prices (scripts/setup.sh --tests installs it)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the calculator failed");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let theirs = answer["prices"].as_array().unwrap();
    assert_eq!(theirs.len(), cases.len());

    let (mut priced, mut cached, mut reasoning, mut written, mut unknown) = (0, 0, 0, 0, 0);
    let mut wrong = Vec::new();
    for (case, their) in cases.iter().zip(theirs) {
        let ours = table
            .cost(
                kite_prices::provider_id(case.provider),
                &case.model,
                &case.usage,
                at,
            )
            .map(|c| c.total);
        let their: Option<f64> = their.as_str().map(|s| s.parse().unwrap());
        match (ours, their) {
            (None, None) => unknown += 1,
            (Some(a), Some(b)) if (a - b).abs() <= 1e-12 + b.abs() * 1e-9 => {
                priced += 1;
                cached += usize::from(case.usage.cached_input_tokens > 0);
                reasoning += usize::from(case.usage.reasoning_tokens > 0);
                written += usize::from(case.usage.cache_write_tokens > 0);
            }
            _ => wrong.push(format!(
                "{} ({} {}, {:?}): kite {ours:?}, genai-prices {their:?}",
                case.name, case.provider, case.model, case.usage
            )),
        }
    }
    assert!(
        wrong.is_empty(),
        "{} disagree:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(priced >= 40, "only {priced} priced ({unknown} unknown)");
    assert!(
        cached > 0 && reasoning > 0 && written >= 3,
        "cached {cached}, reasoning {reasoning}, written {written}"
    );
    eprintln!(
        "{priced} priced alike ({recorded} recorded cases), {unknown} unknown to both ({})",
        table.source
    );
}

#[test]
fn a_reported_cost_wins_an_unknown_model_has_none_and_the_local_model_is_free() {
    let table = PriceTable::snapshot();
    let usage = Usage {
        input_tokens: 1000,
        output_tokens: 100,
        ..Usage::default()
    };
    let reported = Usage {
        cost: Some(0.0123),
        ..usage
    };
    assert_eq!(
        call_cost(table, "openrouter", "openai/gpt-4o-mini", &reported),
        Some(0.0123)
    );
    assert_eq!(
        call_cost(table, "openai", "no-such-model-xyz", &usage),
        None
    );
    assert_eq!(call_cost(table, "kite_local", "smollm2", &usage), Some(0.0));
    let priced = call_cost(table, "openai", "gpt-4o-mini", &usage).unwrap();
    assert!(priced > 0.0);
    // Tiers apply to the whole request once its input passes the tier's start.
    let big = Usage {
        input_tokens: 300_000,
        output_tokens: 1_000,
        ..Usage::default()
    };
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(AT_UNIX);
    let sonnet = table
        .cost("anthropic", "claude-sonnet-4-5", &big, at)
        .unwrap();
    assert!((sonnet.total - 1.8225).abs() < 1e-9, "{sonnet:?}");
}
