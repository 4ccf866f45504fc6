//! What a demo URL asks for (a [`View`]), the URL of a view, and the GraphQL variables that
//! fetch it. Every view has one URL: parameters in a fixed order, defaults left out, ratings
//! sorted, so the pager, the rating form and the canonical link all name a page the same way.
//!
//! **Sorting.** `sort` is the connection's `orderBy`, in lower case (`sort=oldest` is
//! `OLDEST`); the orders offered are the schema's own (`CommentOrder`), so a new order shows up
//! in the selector as it lands. Pages of a sort are numbered from its start, so `numbering`
//! (which end of the newest-first list page 1 holds) applies to the default order only and is
//! left out of every other.

use async_graphql::resolver_utils::EnumType;
use serde_json::{Value, json};

use crate::graphql::CommentOrder;

/// The product a URL without `sku` shows: the one the embedded server seeds.
pub(super) const DEFAULT_SKU: &str = "DAFT_PUNK_TSHIRT";
/// Comments per page when the URL gives no `size`.
pub(super) const DEFAULT_SIZE: u32 = 10;
/// The highest page number a URL may carry (nine digits, as the script reads them).
const MAX_PAGE: u64 = 999_999_999;
/// The default order (`CommentOrder`'s default).
pub(super) const DEFAULT_ORDER: &str = "NEWEST";

/// The orders a view may be sorted in: `CommentOrder`'s values, the default first.
pub(super) fn orders() -> impl Iterator<Item = &'static str> {
    CommentOrder::items().iter().map(|item| item.name)
}

/// How the selector and the status line name an order: `HIGHEST_RATED` is "Highest rated
/// first".
pub(super) fn order_label(order: &str) -> String {
    let words = order.to_lowercase().replace('_', " ");
    let mut chars = words.chars();
    let first = chars.next().map(|c| c.to_uppercase().to_string());
    format!("{}{} first", first.unwrap_or_default(), chars.as_str())
}

/// One view of the demo: a product's comments, filtered, cut into pages of `size` and numbered
/// from one end, or the page that holds one comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct View {
    pub sku: String,
    /// The `CommentOrder` value (`sort`, in lower case, in the URL).
    pub order: &'static str,
    /// From 1. With `comment`, the page the URL claims (the comment decides the page shown).
    pub page: u64,
    /// Page 1 holds the oldest comments (`numbering=oldest`), rather than the newest; only in
    /// the default order.
    pub from_oldest: bool,
    /// Only these ratings, ascending without repeats; empty for all.
    pub ratings: Vec<u8>,
    /// Only verified purchases (`verified=1`).
    pub verified: bool,
    pub size: u32,
    /// A permalink: the page that holds this comment (a global id).
    pub comment: Option<String>,
}

/// A URL parameter that makes no sense, said for a reader.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct BadLink(pub String);

impl View {
    /// The first page of `sku`'s comments, under every default.
    pub(super) fn first_page(sku: &str) -> Self {
        Self {
            sku: sku.to_owned(),
            order: DEFAULT_ORDER,
            page: 1,
            from_oldest: false,
            ratings: vec![],
            verified: false,
            size: DEFAULT_SIZE,
            comment: None,
        }
    }

    /// The view `query` (a URL's query string) asks for, under a page size of at most
    /// `max_size`. Unknown parameters are ignored (trackers add their own); a repeated one
    /// counts once, except `ratings`, which adds up (`ratings=4&ratings=5`, what the rating
    /// form sends, is `ratings=4,5`).
    pub(super) fn parse(query: &str, max_size: u32) -> Result<Self, BadLink> {
        let params: Vec<(String, String)> = serde_urlencoded::from_str(query)
            .map_err(|_| BadLink("The address is not a valid link.".to_owned()))?;
        let first = |name: &str| {
            params
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.as_str())
        };
        let mut view = Self::first_page(
            first("sku")
                .filter(|s| !s.is_empty())
                .unwrap_or(DEFAULT_SKU),
        );
        if let Some(sort) = first("sort") {
            view.order = order(sort)?;
        }
        if let Some(page) = first("page") {
            view.page = whole_number(page, 1, MAX_PAGE, "page number")?;
        }
        match first("numbering") {
            None | Some("newest") => {}
            Some("oldest") => view.from_oldest = true,
            Some(other) => {
                return Err(BadLink(format!(
                    "“{other}” is not a numbering: use “newest” or “oldest”."
                )));
            }
        }
        if let Some(size) = first("size") {
            view.size = whole_number(size, 1, u64::from(max_size), "page size")? as u32;
        }
        for (_, value) in params.iter().filter(|(key, _)| key == "ratings") {
            for rating in value.split(',').filter(|r| !r.is_empty()) {
                view.ratings
                    .push(whole_number(rating, 1, 5, "rating")? as u8);
            }
        }
        view.ratings.sort_unstable();
        view.ratings.dedup();
        view.verified = match first("verified") {
            None | Some("" | "0") => false,
            Some("1") => true,
            Some(other) => {
                return Err(BadLink(format!(
                    "“{other}” is not a verified filter: use “1” (verified purchases only) or leave it out."
                )));
            }
        };
        view.comment = first("comment")
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        view.from_oldest &= view.order == DEFAULT_ORDER;
        Ok(view)
    }

    /// This view's URL, path and query (the script builds the same, `viewUrl` in `demo.js`).
    pub(super) fn url(&self) -> String {
        let mut params: Vec<(&str, String)> = vec![("sku", self.sku.clone())];
        if self.order != DEFAULT_ORDER {
            params.push(("sort", self.order.to_lowercase()));
        }
        if self.page != 1 {
            params.push(("page", self.page.to_string()));
        }
        if self.from_oldest {
            params.push(("numbering", "oldest".to_owned()));
        }
        if !self.ratings.is_empty() {
            let ratings: Vec<String> = self.ratings.iter().map(u8::to_string).collect();
            params.push(("ratings", ratings.join(",")));
        }
        if self.verified {
            params.push(("verified", "1".to_owned()));
        }
        if self.size != DEFAULT_SIZE {
            params.push(("size", self.size.to_string()));
        }
        if let Some(comment) = &self.comment {
            params.push(("comment", comment.clone()));
        }
        let query = serde_urlencoded::to_string(&params).unwrap_or_default();
        format!("/demo?{}", query.replace("%2C", ","))
    }

    /// Page `page` of this view's list (same product, filter, size and numbering).
    pub(super) fn at_page(&self, page: u64) -> Self {
        Self {
            page,
            comment: None,
            ..self.clone()
        }
    }

    /// The first page of this view's list under the other `numbering`, or the same.
    pub(super) fn numbered(&self, from_oldest: bool) -> Self {
        Self {
            from_oldest,
            ..self.at_page(1)
        }
    }

    /// The first page of this view's comments sorted in `order` (numbered from its start).
    pub(super) fn sorted(&self, order: &'static str) -> Self {
        Self {
            order,
            from_oldest: false,
            ..self.at_page(1)
        }
    }

    /// This view's list with other ratings, from its first page.
    pub(super) fn rated(&self, ratings: Vec<u8>) -> Self {
        Self {
            ratings,
            ..self.at_page(1)
        }
    }

    /// This view's list with or without the verified filter, from its first page.
    pub(super) fn verified_only(&self, verified: bool) -> Self {
        Self {
            verified,
            ..self.at_page(1)
        }
    }

    /// How many comments come before this page in its numbering: `None` when that is past what
    /// a GraphQL `Int` holds (no list is that long).
    pub(super) fn offset(&self) -> Option<i32> {
        let offset = (self.page - 1).checked_mul(u64::from(self.size))?;
        i32::try_from(offset).ok()
    }

    /// The variables of the page's query (`storefront.graphql`) for this view: page `p` of `n`
    /// is `first: n, offset: (p - 1) * n` from the start of its order (`FROM_START`), `last: n`
    /// from its end (`FROM_END`, `numbering=oldest` in the default order); a permalink asks for
    /// the page `containing` its comment. `None` when the offset is past any list
    /// ([`View::offset`]).
    pub(super) fn variables(&self) -> Option<Value> {
        let ratings = (!self.ratings.is_empty()).then_some(&self.ratings);
        let numbering = if self.from_oldest {
            "FROM_END"
        } else {
            "FROM_START"
        };
        let mut variables = json!({
            "sku": self.sku, "orderBy": self.order, "ratings": ratings, "numbering": numbering,
        });
        let fields = variables.as_object_mut()?;
        if self.verified {
            fields.insert("verified".into(), json!(true));
        }
        if let Some(comment) = &self.comment {
            fields.insert("containing".into(), json!(comment));
            fields.insert("first".into(), json!(self.size));
        } else {
            let end = if self.from_oldest { "last" } else { "first" };
            fields.insert(end.into(), json!(self.size));
            fields.insert("offset".into(), json!(self.offset()?));
        }
        Some(variables)
    }
}

/// The order `sort` names (`oldest` is `OLDEST`), or why not.
fn order(sort: &str) -> Result<&'static str, BadLink> {
    orders()
        .find(|order| order.to_lowercase() == sort)
        .ok_or_else(|| {
            let mut known: Vec<String> = orders()
                .map(|o| format!("“{}”", o.to_lowercase()))
                .collect();
            let last = known.pop().unwrap_or_default();
            let known = if known.is_empty() {
                last
            } else {
                format!("{} or {last}", known.join(", "))
            };
            BadLink(format!("“{sort}” is not an order: use {known}."))
        })
}

/// `text` as a whole number from `min` to `max`, or why not.
fn whole_number(text: &str, min: u64, max: u64, what: &str) -> Result<u64, BadLink> {
    let number = (!text.is_empty() && text.len() <= 9 && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse::<u64>().ok())
        .flatten()
        .filter(|n| (min..=max).contains(n));
    number.ok_or_else(|| {
        let range = if max >= MAX_PAGE {
            format!("{min} or more")
        } else {
            format!("{min} to {max}")
        };
        BadLink(format!(
            "“{text}” is not a {what}: use a whole number, {range}."
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(query: &str) -> Result<View, BadLink> {
        View::parse(query, 100)
    }

    #[test]
    fn every_parameter_is_optional_and_defaults_are_left_out_of_the_url() {
        let view = parse("").expect("a view");
        assert_eq!(view, View::first_page(DEFAULT_SKU));
        assert_eq!(view.url(), "/demo?sku=DAFT_PUNK_TSHIRT");
        let view = parse(
            "sku=A&page=3&numbering=oldest&ratings=5,2&ratings=4&size=20&comment=Q29t&utm_source=x",
        )
        .expect("a view");
        assert_eq!(
            view.url(),
            "/demo?sku=A&page=3&numbering=oldest&ratings=2,4,5&size=20&comment=Q29t"
        );
        assert_eq!(parse(&view.url()[6..]), Ok(view));
        let sorted = parse("sku=A&sort=oldest&page=2&numbering=oldest").expect("a view");
        assert_eq!(
            sorted.url(),
            "/demo?sku=A&sort=oldest&page=2",
            "numbering is the default order's"
        );
        let default = parse("sku=A&sort=newest").map(|v| v.url());
        assert_eq!(default, Ok("/demo?sku=A".to_owned()));
    }

    #[test]
    fn what_the_rating_form_sends_is_the_same_view_as_the_pagers_links() {
        let form = parse("sku=A&ratings=5&ratings=2&ratings=5").expect("a view");
        assert_eq!(form, parse("sku=A&ratings=2,5").expect("a view"));
        assert_eq!(form.url(), "/demo?sku=A&ratings=2,5");
    }

    #[test]
    fn every_order_of_the_schema_is_offered_and_named_for_a_reader() {
        let orders: Vec<&str> = orders().collect();
        assert_eq!(orders[0], DEFAULT_ORDER);
        assert!(orders.contains(&"OLDEST"), "{orders:?}");
        assert_eq!(order_label("NEWEST"), "Newest first");
        assert_eq!(order_label("HIGHEST_RATED"), "Highest rated first");
    }

    #[test]
    fn values_are_encoded_in_the_url() {
        let view = View::first_page("a b&c=d");
        assert_eq!(view.url(), "/demo?sku=a+b%26c%3Dd");
        assert_eq!(parse(&view.url()[6..]).expect("a view").sku, "a b&c=d");
    }

    #[test]
    fn a_bad_parameter_says_what_it_should_be() {
        let cases = [
            (
                "page=0",
                "“0” is not a page number: use a whole number, 1 or more.",
            ),
            (
                "page=two",
                "“two” is not a page number: use a whole number, 1 or more.",
            ),
            (
                "page=1234567890",
                "“1234567890” is not a page number: use a whole number, 1 or more.",
            ),
            (
                "size=101",
                "“101” is not a page size: use a whole number, 1 to 100.",
            ),
            (
                "ratings=6",
                "“6” is not a rating: use a whole number, 1 to 5.",
            ),
            (
                "ratings=4,-1",
                "“-1” is not a rating: use a whole number, 1 to 5.",
            ),
            (
                "numbering=sideways",
                "“sideways” is not a numbering: use “newest” or “oldest”.",
            ),
            (
                "sort=NEWEST",
                "“NEWEST” is not an order: use “newest”, “oldest”, “highest_rated”, “lowest_rated” or “most_helpful”.",
            ),
        ];
        for (query, message) in cases {
            assert_eq!(parse(query), Err(BadLink(message.to_owned())), "{query}");
        }
    }

    #[test]
    fn variables_ask_for_the_page_the_url_names() {
        let variables = |query: &str| parse(query).expect("a view").variables();
        assert_eq!(
            variables("sku=A&page=3&ratings=4,5"),
            Some(json!({ "sku": "A", "orderBy": "NEWEST", "ratings": [4, 5],
                         "numbering": "FROM_START", "first": 10, "offset": 20 }))
        );
        assert_eq!(
            variables("sku=A&page=2&numbering=oldest&size=7"),
            Some(json!({ "sku": "A", "orderBy": "NEWEST", "ratings": null,
                         "numbering": "FROM_END", "last": 7, "offset": 7 }))
        );
        assert_eq!(
            variables("sku=A&page=2&sort=oldest&numbering=oldest"),
            Some(json!({ "sku": "A", "orderBy": "OLDEST", "ratings": null,
                         "numbering": "FROM_START", "first": 10, "offset": 10 }))
        );
        assert_eq!(
            variables("sku=A&page=9&comment=Q29t"),
            Some(json!({ "sku": "A", "orderBy": "NEWEST", "ratings": null,
                         "numbering": "FROM_START", "containing": "Q29t", "first": 10 }))
        );
        assert_eq!(
            variables("sku=A&verified=1&page=2"),
            Some(
                json!({ "sku": "A", "orderBy": "NEWEST", "ratings": null, "verified": true,
                         "numbering": "FROM_START", "first": 10, "offset": 10 })
            )
        );
        let verified = parse("verified=1&sku=A&ratings=5").expect("a view");
        assert_eq!(verified.url(), "/demo?sku=A&ratings=5&verified=1");
        assert_eq!(verified.verified_only(false).url(), "/demo?sku=A&ratings=5");
        assert!(parse("sku=A&verified=yes").is_err());
        assert_eq!(parse("sku=A&verified=0"), parse("sku=A"));
        let past_any_list = parse("page=999999999&size=100").expect("a view");
        assert_eq!(past_any_list.variables(), None);
    }
}
