//! How much of a failure a client is told: at most [`MAX_ERRORS`] errors, then one saying how
//! many more were cut.
//!
//! Why: async-graphql reports every validation error it finds, one per unknown field, so a
//! 9.8 kB document of 4,900 unknown fields answered 695 kB of errors (issue 22, item 8): a
//! seventy-fold amplification that costs the server the serialisation and the bandwidth. The
//! first errors say what is wrong; the rest repeat it. The cut applies to every response, so a
//! document of many failing aliased fields is bounded alike (their `null`s stay in `data`).

use async_graphql::{ErrorExtensionValues, ServerError};

/// Errors one response carries before the cut.
pub const MAX_ERRORS: usize = 20;

/// Keeps the first [`MAX_ERRORS`] of `errors` and, if any were cut, appends one error
/// (`TOO_MANY_ERRORS`) that says how many.
pub fn cap(errors: &mut Vec<ServerError>) {
    let cut = errors.len().saturating_sub(MAX_ERRORS);
    if cut == 0 {
        return;
    }
    errors.truncate(MAX_ERRORS);
    let mut summary = ServerError::new(
        format!("{cut} more errors were cut: only the first {MAX_ERRORS} are reported"),
        None,
    );
    let mut extensions = ErrorExtensionValues::default();
    extensions.set("code", "TOO_MANY_ERRORS");
    summary.extensions = Some(extensions);
    errors.push(summary);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(n: usize) -> Vec<ServerError> {
        (0..n)
            .map(|i| ServerError::new(format!("error {i}"), None))
            .collect()
    }

    #[test]
    fn twenty_errors_pass_untouched() {
        let mut twenty = errors(20);
        cap(&mut twenty);
        assert_eq!(twenty, errors(20));
    }

    #[test]
    fn beyond_twenty_one_error_says_how_many_were_cut() {
        let mut many = errors(4_900);
        cap(&mut many);
        assert_eq!(many.len(), MAX_ERRORS + 1);
        assert_eq!(many[19].message, "error 19");
        let summary = many.last().expect("the summary");
        assert_eq!(
            summary.message,
            "4880 more errors were cut: only the first 20 are reported"
        );
        let code = summary.extensions.as_ref().and_then(|e| e.get("code"));
        assert_eq!(code, Some(&async_graphql::Value::from("TOO_MANY_ERRORS")));
    }
}
