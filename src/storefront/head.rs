//! What a page tells search engines in its `<head>`: its canonical URL, the previous and next
//! pages, a description, `noindex` for a list without comments, and the JSON-LD (`json_ld`).
//!
//! **Canonical URLs name pages whose content stays put.** Comments arrive at the newest end,
//! so under `numbering=oldest` a full page keeps its comments under its number for good, while
//! under the default numbering every page shifts by one comment per new one. So:
//!
//! - a page numbered from the oldest is its own canonical URL;
//! - the first page (the newest comments, what a product links to) is its own too;
//! - any other page numbered from the newest names the oldest-numbered page that holds its
//!   first comment (where its comments stay; `startOffset` and `totalCount` say which), or the
//!   first page when the index cannot say;
//! - a permalink (`comment=`) is canonical to the page it shows, by the same rules;
//! - a sorted page (`sort=`) is another order of the same comments: under `OLDEST`, page `p`
//!   holds exactly the comments of the default order's oldest-numbered page `p` (the same
//!   slice, read from the other end), which is its canonical URL; under any other order a page
//!   draws from all over the list, so it names the default order's first page (common
//!   practice for sorted views).
//!
//! The canonical URL keeps the view's filter and page size (a filtered list is another list)
//! and drops the permalink. URLs are path-absolute (`/demo?…`): the page names no origin, so it
//! is right behind any host name or proxy.

use std::fmt::Write;

use super::answer::{Comments, Product};
use super::html::{esc, grouped};
use super::json_ld;
use super::view::{DEFAULT_ORDER, View};

/// The `<head>` elements of `view`, showing `shown` (the view at the page it holds).
pub(super) fn elements(
    view: &View,
    shown: &View,
    product: &Product,
    comments: &Comments,
) -> String {
    let mut head = format!(
        "<link rel=\"canonical\" href=\"{}\">",
        esc(&canonical(shown, comments).url())
    );
    if let Some(cursors) = &comments.page_cursors {
        for (rel, link) in [("prev", &cursors.previous), ("next", &cursors.next)] {
            if let Some(link) = link {
                let href = view.at_page(link.page).url();
                let _ = write!(head, "<link rel=\"{rel}\" href=\"{}\">", esc(&href));
            }
        }
    }
    let _ = write!(
        head,
        "<meta name=\"description\" content=\"{}\">",
        esc(&description(product))
    );
    if comments.nodes.is_empty() {
        head.push_str("<meta name=\"robots\" content=\"noindex\">");
    }
    if let Some(element) = json_ld::element(product, &comments.nodes) {
        head.push_str(&element);
    }
    head
}

/// The canonical view of `shown`: see the module's comment.
pub(super) fn canonical(shown: &View, comments: &Comments) -> View {
    let page = shown.at_page(shown.page);
    match shown.order {
        DEFAULT_ORDER => {}
        "OLDEST" => {
            return View {
                order: DEFAULT_ORDER,
                from_oldest: true,
                ..page
            };
        }
        _ => return page.sorted(DEFAULT_ORDER),
    }
    if shown.from_oldest || shown.page == 1 {
        return page;
    }
    match (comments.start_offset, comments.total_count) {
        (Some(start), Some(total)) if start < total => View {
            from_oldest: true,
            ..page.at_page((total - 1 - start) / u64::from(shown.size) + 1)
        },
        _ => page.at_page(1),
    }
}

/// "Customer reviews of SKU: 4.1 out of 5 from 237 reviews."
fn description(product: &Product) -> String {
    let sku = &product.sku;
    match &product.rating_summary {
        Some(summary) if summary.total > 0 => format!(
            "Customer reviews of {sku}: {:.1} out of 5 from {} {}.",
            summary.average.unwrap_or_default(),
            grouped(summary.total),
            if summary.total == 1 {
                "review"
            } else {
                "reviews"
            }
        ),
        _ => format!("Customer reviews of {sku}."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comments(start: Option<u64>, total: Option<u64>) -> Comments {
        serde_json::from_value(serde_json::json!({
            "totalCount": total, "startOffset": start, "nodes": [], "pageCursors": null,
        }))
        .expect("comments")
    }

    fn view(query: &str) -> View {
        View::parse(query, 100).expect("a view")
    }

    #[test]
    fn pages_whose_content_stays_put_are_their_own_canonical_url() {
        let any = comments(Some(20), Some(237));
        let oldest = view("sku=A&page=3&numbering=oldest&ratings=5");
        assert_eq!(
            canonical(&oldest, &any).url(),
            "/demo?sku=A&page=3&numbering=oldest&ratings=5"
        );
        assert_eq!(canonical(&view("sku=A"), &any).url(), "/demo?sku=A");
        let permalink = view("sku=A&page=4&numbering=oldest&comment=Q29t");
        assert_eq!(
            canonical(&permalink, &any).url(),
            "/demo?sku=A&page=4&numbering=oldest"
        );
    }

    #[test]
    fn a_newest_first_page_names_the_oldest_first_page_of_its_first_comment() {
        // 237 comments: newest-first page 3 starts at the 21st newest, the 217th oldest, which
        // is on page 22 of the oldest-first numbering (comments 211 to 220).
        let shown = view("sku=A&page=3&size=10");
        assert_eq!(
            canonical(&shown, &comments(Some(20), Some(237))).url(),
            "/demo?sku=A&page=22&numbering=oldest"
        );
        assert_eq!(
            canonical(&shown, &comments(Some(20), None)).url(),
            "/demo?sku=A"
        );
        let last = view("sku=A&page=24");
        assert_eq!(
            canonical(&last, &comments(Some(230), Some(237))).url(),
            "/demo?sku=A&numbering=oldest"
        );
    }

    #[test]
    fn an_oldest_first_page_names_the_same_comments_in_the_default_order() {
        let any = comments(Some(20), Some(237));
        let sorted = view("sku=A&sort=oldest&page=3&ratings=5&size=20");
        assert_eq!(
            canonical(&sorted, &any).url(),
            "/demo?sku=A&page=3&numbering=oldest&ratings=5&size=20"
        );
        let other = View {
            order: "HIGHEST_RATED",
            ..view("sku=A&page=3&ratings=5")
        };
        assert_eq!(canonical(&other, &any).url(), "/demo?sku=A&ratings=5");
    }
}
