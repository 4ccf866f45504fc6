//! The page's structured data for search engines: one JSON-LD `Product` (schema.org) with its
//! `aggregateRating` and the page's comments as `review`s, with the fields Google's review
//! snippet documentation asks for (a `Review`'s `author` as a `Person` with a `name`,
//! `reviewRating` with a `ratingValue`, `datePublished`, `reviewBody`; the item reviewed is the
//! `Product` they are nested in, which has a `name`). Comments are user input: the JSON goes
//! into the page through `html::script_json`, so none of it can end the `<script>` element.

use serde_json::{Value, json};

use super::answer::{Comment, Product};
use super::html::script_json;

/// The `<script type="application/ld+json">` element of a page of `product` showing
/// `comments`; `None` for a product without comments (rich results need a rating or a
/// review, and there is neither).
pub(super) fn element(product: &Product, comments: &[Comment]) -> Option<String> {
    let data = structured_data(product, comments)?;
    Some(format!(
        "<script type=\"application/ld+json\">{}</script>",
        script_json(&data.to_string())
    ))
}

fn structured_data(product: &Product, comments: &[Comment]) -> Option<Value> {
    let mut data = json!({
        "@context": "https://schema.org",
        "@type": "Product",
        "name": product.sku,
        "sku": product.sku,
    });
    let fields = data.as_object_mut()?;
    let summary = product.rating_summary.as_ref();
    if let Some((total, average)) = summary.and_then(|s| Some((s.total, s.average?))) {
        if total > 0 {
            fields.insert(
                "aggregateRating".into(),
                json!({
                    "@type": "AggregateRating",
                    "ratingValue": (average * 100.0).round() / 100.0,
                    "ratingCount": total,
                    "reviewCount": total,
                    "bestRating": 5,
                    "worstRating": 1,
                }),
            );
        }
    }
    if !comments.is_empty() {
        let reviews: Vec<Value> = comments.iter().map(review).collect();
        fields.insert("review".into(), Value::Array(reviews));
    }
    (fields.contains_key("aggregateRating") || fields.contains_key("review")).then_some(data)
}

fn review(comment: &Comment) -> Value {
    json!({
        "@type": "Review",
        "author": { "@type": "Person", "name": comment.author },
        "datePublished": comment.created_at,
        "reviewBody": comment.body,
        "reviewRating": {
            "@type": "Rating",
            "ratingValue": comment.rating,
            "bestRating": 5,
            "worstRating": 1,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(total: u64, average: Option<f64>) -> Product {
        serde_json::from_value(json!({
            "sku": "TEE",
            "ratingSummary": { "total": total, "average": average, "counts": [] },
            "comments": null,
        }))
        .expect("a product")
    }

    fn comment(body: &str) -> Comment {
        serde_json::from_value(json!({
            "id": "Q29tbWVudDox", "author": "Zoë </script>", "body": body, "rating": 4,
            "createdAt": "2025-03-03T14:05:09.123Z", "updatedAt": null,
        }))
        .expect("a comment")
    }

    #[test]
    fn a_page_of_reviews_carries_the_rating_and_each_review() {
        let element = element(
            &product(237, Some(3.8312)),
            &[comment("<b>great</b> & cheap")],
        )
        .expect("structured data");
        let json = element
            .strip_prefix("<script type=\"application/ld+json\">")
            .and_then(|e| e.strip_suffix("</script>"))
            .expect("one element");
        assert!(
            !json.contains('<') && !json.contains('>') && !json.contains('&'),
            "{json}"
        );
        let data: Value = serde_json::from_str(json).expect("JSON");
        assert_eq!(data["@type"], "Product");
        assert_eq!(data["name"], "TEE");
        assert_eq!(
            data["aggregateRating"],
            json!({ "@type": "AggregateRating", "ratingValue": 3.83, "ratingCount": 237,
                    "reviewCount": 237, "bestRating": 5, "worstRating": 1 })
        );
        let review = &data["review"][0];
        assert_eq!(
            review["author"],
            json!({ "@type": "Person", "name": "Zoë </script>" })
        );
        assert_eq!(review["reviewBody"], "<b>great</b> & cheap");
        assert_eq!(review["reviewRating"]["ratingValue"], 4);
        assert_eq!(review["datePublished"], "2025-03-03T14:05:09.123Z");
    }

    #[test]
    fn a_product_without_comments_has_none() {
        assert_eq!(element(&product(0, None), &[]), None);
    }
}
