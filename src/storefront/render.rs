//! The HTML of a view, drawn from the API's answer: the product and its rating, the rating
//! form and numbering links, the comments, the pager; or a page that says what went wrong.
//! Every text from the answer is escaped (`html::esc`); the markup and its `data-*`
//! attributes are what `demo.js` enhances and the browser tests read (see `demo.js`'s head).

use std::fmt::Write;

use axum::http::StatusCode;

use super::answer::{Comment, Comments, Failure, PageCursors, Product};
use super::head;
use super::html::{date, esc, grouped, stars};
use super::verified;
use super::view::{self, View};

/// A page's parts, for `demo.html`'s placeholders.
#[derive(Debug, Default)]
pub(super) struct Rendered {
    pub status: StatusCode,
    pub title: String,
    /// Links and structured data for `<head>` (`head`).
    pub head: String,
    /// `data-*` attributes of `<main>`: its state and, for the script, the view.
    pub main: String,
    pub product: String,
    pub summary: String,
    pub filters: String,
    pub status_line: String,
    pub error: String,
    pub comments: String,
    pub pager: String,
}

/// The page of `view`, from the answer's `product` and its `comments`; `partial` when the
/// answer had errors beside its comments (counts or page numbers missing). A page past the
/// end of the list is a 404 that says how many pages there are.
pub(super) fn reviews(
    view: &View,
    product: &Product,
    comments: &Comments,
    partial: bool,
    statement: Option<&str>,
) -> Rendered {
    let cursors = comments.page_cursors.as_ref();
    let page = cursors.and_then(PageCursors::current).unwrap_or(view.page);
    let size = u64::from(view.size);
    let page_count = cursors.map_or_else(
        || comments.total_count.unwrap_or_default().div_ceil(size),
        |c| c.page_count,
    );
    if comments.nodes.is_empty() && view.page > 1 && view.comment.is_none() {
        return past_the_end(view, page_count);
    }
    let shown = view.at_page(page);
    let mut main = format!(
        "data-state=\"ready\" data-sku=\"{}\" data-sort=\"{}\" data-page=\"{page}\" data-size=\"{}\" data-numbering=\"{}\" data-ratings=\"{}\"",
        esc(&view.sku),
        view.order.to_lowercase(),
        view.size,
        if view.from_oldest { "oldest" } else { "newest" },
        ratings_list(&view.ratings),
    );
    if view.verified {
        main.push_str(" data-verified=\"1\"");
    }
    if let Some(comment) = &view.comment {
        let _ = write!(main, " data-comment=\"{}\"", esc(comment));
    }
    let of = if page_count > 0 {
        format!(" of {page_count}")
    } else {
        String::new()
    };
    Rendered {
        status: StatusCode::OK,
        title: format!("Page {page}{of} · Customer reviews of {}", product.sku),
        head: head::elements(view, &shown, product, comments),
        main,
        product: format!("Product <strong>{}</strong>", esc(&product.sku)),
        summary: summary(product) + &verified::statement(statement),
        filters: filters(view, product),
        status_line: status_line(view, comments, partial),
        comments: comments
            .nodes
            .iter()
            .map(|c| item(view, &shown, c))
            .collect(),
        pager: cursors.map(|c| pager(view, c)).unwrap_or_default(),
        ..Rendered::default()
    }
}

/// `4,5`: ratings as the URL and `data-ratings` list them.
fn ratings_list(ratings: &[u8]) -> String {
    let ratings: Vec<String> = ratings.iter().map(u8::to_string).collect();
    ratings.join(",")
}

/// A page number past the end of the list (404).
pub(super) fn past_the_end(view: &View, page_count: u64) -> Rendered {
    let last = page_count.max(1);
    let pages = if page_count == 1 {
        "1 page".to_owned()
    } else {
        format!("{} pages", grouped(page_count))
    };
    failure(
        &view.sku,
        StatusCode::NOT_FOUND,
        &format!("There is no page {}", view.page),
        &format!("These comments fill {pages}."),
        &[
            (
                view.at_page(last).url(),
                format!("Go to the last page ({last})"),
            ),
            (view.at_page(1).url(), "Go to the first page".to_owned()),
        ],
    )
}

/// The page for an answer without comments (`Failure`), with links onward.
pub(super) fn failed(view: &View, why: &Failure) -> Rendered {
    let mut links = vec![];
    if why.code == "NOT_FOUND" && (!view.ratings.is_empty() || view.verified) {
        let all = View {
            ratings: vec![],
            verified: false,
            ..view.clone()
        };
        let among = if view.ratings.is_empty() {
            "reviews"
        } else {
            "ratings"
        };
        links.push((all.url(), format!("Look for it among all {among}")));
    }
    if why.status.is_client_error() && why.status != StatusCode::TOO_MANY_REQUESTS {
        links.push((
            View::first_page(&view.sku).url(),
            "Go to the first page".to_owned(),
        ));
    } else {
        links.push((view.url(), "Try again".to_owned()));
    }
    failure(&view.sku, why.status, why.title, &why.detail, &links)
}

/// A page that says what went wrong (`status`), for `sku`, with `links` (`(href, text)`).
pub(super) fn failure(
    sku: &str,
    status: StatusCode,
    title: &str,
    detail: &str,
    links: &[(String, String)],
) -> Rendered {
    let mut error = format!(
        "<div id=\"error\" class=\"error\" role=\"alert\"><p id=\"error-title\" class=\"error-title\">{}</p><p id=\"error-detail\">{}</p><ul id=\"error-links\">",
        esc(title),
        esc(detail)
    );
    for (href, text) in links {
        let _ = write!(
            error,
            "<li><a href=\"{}\">{}</a></li>",
            esc(href),
            esc(text)
        );
    }
    error.push_str("</ul></div>");
    Rendered {
        status,
        title: format!("{title} · Customer reviews"),
        head: "<meta name=\"robots\" content=\"noindex\">".to_owned(),
        main: format!("data-state=\"error\" data-sku=\"{}\"", esc(sku)),
        product: format!("Product <strong>{}</strong>", esc(sku)),
        error,
        ..Rendered::default()
    }
}

/// Stars, the average and the count of the product's comments.
fn summary(product: &Product) -> String {
    match &product.rating_summary {
        Some(summary) if summary.total > 0 => {
            let average = summary.average.unwrap_or_default();
            let noun = if summary.total == 1 {
                "review"
            } else {
                "reviews"
            };
            format!(
                "{} {average:.1} out of 5 · {} {noun}",
                stars(average.round().clamp(0.0, 5.0) as u8, true),
                grouped(summary.total)
            )
        }
        _ => String::new(),
    }
}

/// The view form: the sort selector and the rating checkboxes (a GET form: without the script,
/// "Apply" submits it; with it, each change opens its view at once); the numbering links.
fn filters(view: &View, product: &Product) -> String {
    let mut html = format!(
        "<form id=\"view-form\" class=\"view-form\" method=\"get\" action=\"/demo\"><input type=\"hidden\" name=\"sku\" value=\"{}\">",
        esc(&view.sku)
    );
    if view.from_oldest {
        html.push_str("<input type=\"hidden\" name=\"numbering\" value=\"oldest\">");
    }
    if view.size != view::DEFAULT_SIZE {
        let _ = write!(
            html,
            "<input type=\"hidden\" name=\"size\" value=\"{}\">",
            view.size
        );
    }
    html.push_str(
        "<p class=\"sort\"><label for=\"sort\">Sort by</label> <select id=\"sort\" name=\"sort\">",
    );
    for order in view::orders() {
        let selected = if order == view.order { " selected" } else { "" };
        let label = view::order_label(order);
        let _ = write!(
            html,
            "<option value=\"{}\"{selected}>{label}</option>",
            order.to_lowercase()
        );
    }
    html.push_str("</select></p><fieldset id=\"rating-filter\"><legend>Rating</legend><ul id=\"rating-options\" class=\"rating-options\">");
    let counts = product.rating_summary.as_ref().map(|s| &s.counts);
    for rating in (1..=5u8).rev() {
        let checked = if view.ratings.contains(&rating) {
            " checked"
        } else {
            ""
        };
        let name = if rating == 1 {
            "1 star".to_owned()
        } else {
            format!("{rating} stars")
        };
        let count = counts
            .and_then(|c| c.iter().find(|c| c.rating == rating))
            .map(|c| format!("<span class=\"count\">{}</span>", grouped(c.count)))
            .unwrap_or_default();
        let _ = write!(
            html,
            "<li><input type=\"checkbox\" id=\"rating-{rating}\" name=\"ratings\" value=\"{rating}\"{checked}><label for=\"rating-{rating}\">{}<span class=\"rating-name\">{name}</span>{count}</label></li>",
            stars(rating, false)
        );
    }
    html.push_str("</ul>");
    if !view.ratings.is_empty() {
        let _ = write!(
            html,
            "<p id=\"rating-clear\" class=\"clear\"><a href=\"{}\">Show all ratings</a></p>",
            esc(&view.rated(vec![]).url())
        );
    }
    html.push_str("</fieldset>");
    html.push_str(&verified::filter(view, product));
    html.push_str("<p class=\"apply\"><button type=\"submit\">Apply</button></p></form>");
    if view.order == view::DEFAULT_ORDER {
        html.push_str(&numbering(view));
    }
    html
}

/// Which end of the newest-first list page 1 holds (the default order's pages only).
fn numbering(view: &View) -> String {
    let mut html = "<nav id=\"numbering\" class=\"numbering\" aria-label=\"Page numbering\"><p>Page 1 holds the</p><ul>".to_owned();
    for (from_oldest, name) in [(false, "newest"), (true, "oldest")] {
        let current = if view.from_oldest == from_oldest {
            " aria-current=\"true\""
        } else {
            ""
        };
        let _ = write!(
            html,
            "<li><a data-numbering=\"{name}\" href=\"{}\"{current}>{name} comments</a></li>",
            esc(&view.numbered(from_oldest).url())
        );
    }
    html.push_str("</ul></nav>");
    html
}

/// "Comments 21–30 of 237, newest first."
fn status_line(view: &View, comments: &Comments, partial: bool) -> String {
    let shown = comments.nodes.len() as u64;
    let order = view::order_label(view.order).to_lowercase();
    let mut status = match (shown, comments.start_offset, comments.total_count) {
        (0, _, _) if view.verified => "No verified purchases here yet.".to_owned(),
        (0, _, _) if view.ratings.is_empty() => "No comments yet.".to_owned(),
        (0, _, _) => "No comments with these ratings.".to_owned(),
        (_, Some(start), Some(total)) => format!(
            "Comments {}–{} of {}, {order}.",
            grouped(start + 1),
            grouped(start + shown),
            grouped(total)
        ),
        _ => format!("{shown} comments, {order}."),
    };
    if partial {
        status.push_str(" Some details (counts, page numbers) are unavailable right now.");
    }
    status
}

/// One comment of the list; the permalinked one highlighted. Its permalink names the page it
/// is on (`shown`), so the URL says where it was even before the script or the page moves.
fn item(view: &View, shown: &View, comment: &Comment) -> String {
    let highlighted = view.comment.as_deref() == Some(comment.id.as_str());
    let (class, marks) = if highlighted {
        (
            "comment highlighted",
            " data-highlighted aria-current=\"true\" tabindex=\"-1\"",
        )
    } else {
        ("comment", "")
    };
    let when = date(&comment.created_at);
    let edited = comment
        .updated_at
        .as_deref()
        .map_or_else(String::new, |at| {
            format!(
                "<span class=\"edited\" title=\"{}\">(edited)</span>",
                esc(at)
            )
        });
    let badge = if highlighted {
        "<span class=\"badge\">Linked comment</span>"
    } else {
        ""
    };
    let permalink = View {
        comment: Some(comment.id.clone()),
        ..shown.clone()
    };
    let (id, author) = (esc(&comment.id), esc(&comment.author));
    let reply = comment.reply.as_ref().map_or_else(String::new, |reply| {
        format!(
            "<aside class=\"reply\"><p class=\"reply-author\">Reply from {}</p><p class=\"reply-body\">{}</p></aside>",
            esc(&reply.author),
            esc(&reply.body)
        )
    });
    format!(
        "<li class=\"{class}\" data-comment-id=\"{id}\"{marks}><article><header><span class=\"author\">{author}</span>{}<time datetime=\"{}\">{}</time>{edited}{}{badge}</header><p class=\"body\">{}</p>{reply}<footer><a class=\"permalink\" rel=\"bookmark\" href=\"{}\" aria-label=\"Permalink to {author}’s comment of {}\">Permalink</a></footer></article></li>",
        stars(comment.rating, true),
        esc(&comment.created_at),
        esc(&when),
        verified::badge(comment.verified_purchase),
        esc(&comment.body),
        esc(&permalink.url()),
        esc(&when),
    )
}

/// First, previous, the pages around this one, next and last, as links to their views;
/// nothing when there is one page.
fn pager(view: &View, cursors: &PageCursors) -> String {
    if cursors.page_count <= 1 {
        return String::new();
    }
    let current = cursors.current();
    let link = |kind: &str, page: Option<u64>, label: &str, extra: String| match page {
        Some(page) => format!(
            "<li><a href=\"{}\" data-page-link=\"{kind}\"{extra}>{label}</a></li>",
            esc(&view.at_page(page).url())
        ),
        None => format!("<li><span class=\"disabled\" aria-disabled=\"true\">{label}</span></li>"),
    };
    let gap = "<li class=\"gap\" aria-hidden=\"true\">…</li>";
    let first_shown = cursors.around.first().map_or(1, |c| c.page);
    let last_shown = cursors.around.last().map_or(cursors.page_count, |c| c.page);
    let mut items = String::new();
    let first = Some(cursors.first.page).filter(|_| !cursors.first.is_current);
    let label = "<span aria-hidden=\"true\">« </span>First";
    items += &link("first", first, label, " aria-label=\"First page\"".into());
    let previous = cursors.previous.as_ref().map(|c| c.page);
    let label = "<span aria-hidden=\"true\">‹ </span>Previous";
    items += &link(
        "previous",
        previous,
        label,
        " rel=\"prev\" aria-label=\"Previous page\"".into(),
    );
    if first_shown > 1 {
        items += gap;
    }
    for around in &cursors.around {
        let mut extra = format!(" aria-label=\"Page {}\"", around.page);
        if around.is_current {
            extra += " aria-current=\"page\"";
        }
        items += &link("page", Some(around.page), &around.page.to_string(), extra);
    }
    if last_shown < cursors.page_count {
        items += gap;
    }
    let next = cursors.next.as_ref().map(|c| c.page);
    let label = "Next<span aria-hidden=\"true\"> ›</span>";
    items += &link(
        "next",
        next,
        label,
        " rel=\"next\" aria-label=\"Next page\"".into(),
    );
    let last = Some(cursors.last.page).filter(|_| !cursors.last.is_current);
    let label = "Last<span aria-hidden=\"true\"> »</span>";
    let extra = format!(" aria-label=\"Last page, {}\"", cursors.last.page);
    items += &link("last", last, label, extra);
    let page_of = current.map_or_else(String::new, |page| {
        format!("Page {page} of {}", cursors.page_count)
    });
    format!(
        "<nav id=\"pager\" class=\"pager\" aria-label=\"Pages\"><p id=\"page-of\" class=\"page-of\">{page_of}</p><ul id=\"page-links\">{items}</ul></nav>"
    )
}
