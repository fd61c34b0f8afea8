//! Arithmetic on numbers.
//!
//! A small recursive-descent evaluator, written here rather than taken from an expression
//! crate so that it provably does nothing but arithmetic: no variables, no assignments, no
//! functions beyond the fixed list, bounded input and depth.

use crate::{Tool, ToolError, ToolOutput, tool};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The arithmetic expression to evaluate, e.g. "3 * (2 + 5)".
    #[schemars(length(min = 1), pattern(PATTERN))]
    expression: String,
}

/// `calculate`: evaluates `+ - * / % ^`, parentheses, `a% of b`, `pi`, `e`, and `sqrt abs
/// ln log10 exp sin cos tan floor ceil round`.
pub fn calculate<C: Send + Sync + 'static>() -> impl Tool<C> {
    tool(
        "calculate",
        "Evaluate an arithmetic expression exactly as written and return the number. \
         `a % b` is a remainder; `a% of b` is a percentage.",
        |args: Args, _| async move {
            let value = evaluate(&args.expression).map_err(ToolError::model)?;
            Ok(ToolOutput::text(format_number(value)))
        },
    )
}

fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// What a model writes an expression with: numbers, operators, parentheses, spaces and the
/// names [`evaluate`] knows, beginning with a number or a name (`0.5`, not `.5`). No tab or
/// line break: a grammar made from the pattern would let one into the JSON string raw. The schema says so, so that a model (and a constrained decoder)
/// writes nothing else.
const PATTERN: &str = concat!(
    r"^[-+( ]*([0-9]|e|pi|sqrt|abs|ln|log10|exp|sin|cos|tan|floor|ceil|round)",
    r"([0-9.eE+*/%^() -]|of|pi|sqrt|abs|ln|log10|exp|sin|cos|tan|floor|ceil|round)*$"
);

const MAX_LEN: usize = 1000;
const MAX_DEPTH: u32 = 64;

/// Evaluates an arithmetic expression.
///
/// ```
/// assert_eq!(kite_agent::builtin::evaluate("2 + 3 * 4").unwrap(), 14.0);
/// assert_eq!(kite_agent::builtin::evaluate("-(2 ^ 3 ^ 2) / 4").unwrap(), -128.0);
/// assert!(kite_agent::builtin::evaluate("1 / 0").is_err());
/// ```
pub fn evaluate(expr: &str) -> Result<f64, String> {
    if expr.len() > MAX_LEN {
        return Err(format!(
            "the expression is longer than {MAX_LEN} characters"
        ));
    }
    let mut p = Parser {
        s: expr.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.expr()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!(
            "unexpected `{}` at position {}",
            &expr[p.i..],
            p.i + 1
        ));
    }
    if !v.is_finite() {
        return Err("the result is not a finite number".into());
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: u32,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// Eats `word` when it comes next as a whole word.
    fn eat_word(&mut self, word: &[u8]) -> bool {
        self.ws();
        let end = self.i + word.len();
        let whole = self.s.get(self.i..end) == Some(word)
            && !self.s.get(end).is_some_and(u8::is_ascii_alphanumeric);
        if whole {
            self.i = end;
        }
        whole
    }

    fn expr(&mut self) -> Result<f64, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("the expression is nested too deeply".into());
        }
        let mut v = self.term()?;
        loop {
            if self.eat(b'+') {
                v += self.term()?;
            } else if self.eat(b'-') {
                v -= self.term()?;
            } else {
                break;
            }
        }
        self.depth -= 1;
        Ok(v)
    }

    fn term(&mut self) -> Result<f64, String> {
        let mut v = self.power()?;
        loop {
            if self.eat(b'*') {
                v *= self.power()?;
            } else if self.eat(b'/') {
                let d = self.power()?;
                if d == 0.0 {
                    return Err("division by zero".into());
                }
                v /= d;
            } else if self.eat(b'%') {
                // `17.5% of 2380`: a percentage of what follows.
                if self.eat_word(b"of") {
                    v = v / 100.0 * self.power()?;
                    continue;
                }
                let d = self.power()?;
                if d == 0.0 {
                    return Err("remainder by zero".into());
                }
                v %= d;
            } else {
                return Ok(v);
            }
        }
    }

    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if self.eat(b'^') {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err("the expression is nested too deeply".into());
            }
            let exp = self.power()?;
            self.depth -= 1;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<f64, String> {
        if self.eat(b'-') {
            return self.power().map(|v| -v);
        }
        if self.eat(b'+') {
            return self.power();
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<f64, String> {
        self.ws();
        if self.eat(b'(') {
            let v = self.expr()?;
            if !self.eat(b')') {
                return Err(format!("missing `)` at position {}", self.i + 1));
            }
            return Ok(v);
        }
        let start = self.i;
        let c = *self.s.get(self.i).ok_or("the expression ends too early")?;
        if c.is_ascii_digit() || c == b'.' {
            while self.i < self.s.len()
                && (self.s[self.i].is_ascii_digit()
                    || self.s[self.i] == b'.'
                    || self.s[self.i] == b'e'
                    || self.s[self.i] == b'E'
                    || ((self.s[self.i] == b'-' || self.s[self.i] == b'+')
                        && matches!(self.s[self.i - 1], b'e' | b'E')))
            {
                self.i += 1;
            }
            let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
            return text
                .parse::<f64>()
                .map_err(|_| format!("`{text}` is not a number"));
        }
        if c.is_ascii_alphabetic() {
            while self.i < self.s.len() && self.s[self.i].is_ascii_alphanumeric() {
                self.i += 1;
            }
            let name = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
            match name {
                "pi" => return Ok(std::f64::consts::PI),
                "e" => return Ok(std::f64::consts::E),
                _ => {}
            }
            let f: fn(f64) -> f64 = match name {
                "sqrt" => f64::sqrt,
                "abs" => f64::abs,
                "ln" => f64::ln,
                "log10" => f64::log10,
                "exp" => f64::exp,
                "sin" => f64::sin,
                "cos" => f64::cos,
                "tan" => f64::tan,
                "floor" => f64::floor,
                "ceil" => f64::ceil,
                "round" => f64::round,
                _ => return Err(format!("unknown name `{name}`")),
            };
            if !self.eat(b'(') {
                return Err(format!("`{name}` needs parentheses"));
            }
            let v = self.expr()?;
            if !self.eat(b')') {
                return Err(format!("missing `)` after the argument of `{name}`"));
            }
            return Ok(f(v));
        }
        Err(format!(
            "unexpected `{}` at position {}",
            c as char,
            self.i + 1
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::evaluate;

    #[test]
    fn precedence_associativity_and_functions() {
        for (e, v) in [
            ("1 + 2 * 3", 7.0),
            ("17.5% of 2380", 416.5),
            ("10 % 4 + 50%of(2 * 4)", 6.0),
            ("(1 + 2) * 3", 9.0),
            ("2 ^ 3 ^ 2", 512.0),
            ("-2 ^ 2", -4.0),
            ("10 % 4", 2.0),
            ("sqrt(16) + abs(-3)", 7.0),
            ("1.5e3 / 3", 500.0),
            ("round(e * 1000)", 2718.0),
        ] {
            assert_eq!(evaluate(e).unwrap(), v, "{e}");
        }
    }

    #[test]
    fn bad_input_is_an_error_naming_the_problem() {
        assert!(evaluate("1 +").unwrap_err().contains("ends too early"));
        assert!(evaluate("2 * (3").unwrap_err().contains("missing `)`"));
        assert!(evaluate("foo(1)").unwrap_err().contains("unknown name"));
        assert!(evaluate("1 / 0").unwrap_err().contains("division by zero"));
        assert!(evaluate("1 2").unwrap_err().contains("unexpected"));
        assert!(
            evaluate(&"(".repeat(500))
                .unwrap_err()
                .contains("nested too deeply")
        );
        assert!(
            evaluate(&"1+".repeat(600))
                .unwrap_err()
                .contains("longer than")
        );
        assert!(evaluate("10 ^ 400").unwrap_err().contains("finite"));
    }
}
