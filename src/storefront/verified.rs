//! What the storefront shows of verified purchases: the badge on a verified comment, the
//! "verified purchases only" filter with its count, and the shop's statement of how reviews are
//! verified (the EU Omnibus directive's requirement, `--verification-statement`).

use std::fmt::Write as _;

use super::answer::Product;
use super::html::{esc, grouped};
use super::view::View;

/// The badge of a verified comment; nothing for another.
pub(super) fn badge(verified: bool) -> &'static str {
    if verified {
        "<span class=\"verified-badge\" data-verified-badge>Verified purchase</span>"
    } else {
        ""
    }
}

/// The filter's checkbox (inside the view form), with the product's count of verified
/// purchases, and a link back to every comment while it is on.
pub(super) fn filter(view: &View, product: &Product) -> String {
    let checked = if view.verified { " checked" } else { "" };
    let count = product
        .rating_summary
        .as_ref()
        .map(|s| format!("<span class=\"count\">{}</span>", grouped(s.verified_count)))
        .unwrap_or_default();
    let mut html = format!(
        "<p id=\"verified-filter\" class=\"verified-filter\"><input type=\"checkbox\" id=\"verified\" name=\"verified\" value=\"1\"{checked}><label for=\"verified\">Verified purchases only{count}</label></p>"
    );
    if view.verified {
        let _ = write!(
            html,
            "<p id=\"verified-clear\" class=\"clear\"><a href=\"{}\">Show every review</a></p>",
            esc(&view.verified_only(false).url())
        );
    }
    html
}

/// The shop's statement of how its reviews are verified; nothing when it set none.
pub(super) fn statement(text: Option<&str>) -> String {
    text.map_or_else(String::new, |text| {
        format!(
            "<p id=\"verification-statement\" class=\"verification-statement\"><strong>How reviews are verified:</strong> {}</p>",
            esc(text)
        )
    })
}
