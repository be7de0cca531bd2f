//! `#[boxoffice_testkit::test]`: `#[tokio::test]` with a deadline on the test's body, so
//! a test that hangs fails fast, naming itself, instead of holding up the whole run.
//!
//! ```text
//! #[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
//! async fn a_slow_scenario_still_finishes() { … }
//! ```
//!
//! Every argument but `timeout_s` (default 120 s) goes to `tokio::test`
//! as it is. The body becomes `boxoffice_testkit::deadline::test_body(…, async move
//! { body }).await`, which fails the test once the deadline passes (see there).

use proc_macro::{Delimiter, Group, TokenStream, TokenTree};

/// Seconds a test may run when it names no `timeout_s`: far above any test's normal
/// time on a loaded two-core machine, far below a CI job's limit.
const DEFAULT_TIMEOUT_S: u64 = 120;

#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    match expand(args, item) {
        Ok(out) => out,
        Err(message) => format!("compile_error!({message:?});")
            .parse()
            .expect("a compile_error! call parses"),
    }
}

fn expand(args: TokenStream, item: TokenStream) -> Result<TokenStream, String> {
    let (timeout_s, tokio_args) = split_args(args)?;
    let mut tokens: Vec<TokenTree> = item.into_iter().collect();
    let name = fn_name(&tokens)?;
    let body = match tokens.pop() {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => g,
        _ => return Err("#[boxoffice_testkit::test] goes on an `async fn` with a body".into()),
    };
    // The body's own tokens go in as they are, so compile errors and panic locations
    // still point at the test's lines.
    let mut call_args = parse(&format!(
        "{timeout_s}, ::std::concat!(::std::module_path!(), \"::{name}\"), async move"
    ))?;
    call_args.extend([TokenTree::Group(body)]);
    let mut wrapped = parse("::boxoffice_testkit::deadline::test_body")?;
    wrapped.extend([TokenTree::Group(Group::new(
        Delimiter::Parenthesis,
        call_args,
    ))]);
    wrapped.extend(parse(".await")?);
    let mut out = match tokio_args.is_empty() {
        true => parse("#[::tokio::test]")?,
        false => parse(&format!("#[::tokio::test({tokio_args})]"))?,
    };
    out.extend(tokens);
    out.extend([TokenTree::Group(Group::new(Delimiter::Brace, wrapped))]);
    Ok(out)
}

/// (`timeout_s`, the other arguments as text for `tokio::test`).
fn split_args(args: TokenStream) -> Result<(u64, String), String> {
    let mut timeout_s = DEFAULT_TIMEOUT_S;
    let mut kept = Vec::new();
    let mut current: Vec<TokenTree> = Vec::new();
    let mut parts = Vec::new();
    for t in args {
        match &t {
            TokenTree::Punct(p) if p.as_char() == ',' => parts.push(std::mem::take(&mut current)),
            _ => current.push(t),
        }
    }
    parts.push(current);
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        match part.as_slice() {
            [
                TokenTree::Ident(k),
                TokenTree::Punct(eq),
                TokenTree::Literal(v),
            ] if k.to_string() == "timeout_s" && eq.as_char() == '=' => {
                timeout_s = v
                    .to_string()
                    .parse()
                    .map_err(|_| format!("timeout_s takes whole seconds, not {v}"))?;
            }
            _ => kept.push(part.into_iter().collect::<TokenStream>().to_string()),
        }
    }
    Ok((timeout_s, kept.join(", ")))
}

/// The identifier after `fn`.
fn fn_name(tokens: &[TokenTree]) -> Result<String, String> {
    tokens
        .windows(2)
        .find_map(|w| match w {
            [TokenTree::Ident(f), TokenTree::Ident(name)] if f.to_string() == "fn" => {
                Some(name.to_string())
            }
            _ => None,
        })
        .ok_or_else(|| "#[boxoffice_testkit::test] goes on a function".into())
}

fn parse(code: &str) -> Result<TokenStream, String> {
    code.parse()
        .map_err(|e| format!("generated code does not parse ({e}): {code}"))
}
