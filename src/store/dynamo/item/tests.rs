//! The item codec's round trips and refusals.

use super::*;

fn sample(updated: Option<u64>) -> Comment {
    Comment {
        purchase: None,
        version: if updated.is_some() { 2 } else { 1 },
        // The edited sample has votes too: both shapes of the count round-trip.
        helpful_count: if updated.is_some() { 7 } else { 0 },
        id: CommentId::from_parts(1_700_000_000_123, 42),
        sku: Sku::parse("DAFT_PUNK_TSHIRT").expect("valid sku"),
        author: "ann".to_owned(),
        // The edited sample also has an author's `sub`: both shapes round-trip.
        author_sub: updated.map(|_| "auth0|ann".to_owned()),
        body: "  spaced body, kept as stored ".to_owned(),
        rating: Rating::new(4).expect("valid rating"),
        created_at_ms: 1_700_000_000_123,
        updated_at_ms: updated,
        moderation: Default::default(),
        reply: None,
        // The edited sample is reported too: open reporters round-trip.
        reporters: updated
            .map(|_| vec!["r1".to_owned(), "r\"2".to_owned()])
            .unwrap_or_default(),
    }
}

#[test]
fn an_item_round_trips_with_and_without_updated_at() {
    for comment in [sample(None), sample(Some(1_700_000_000_999))] {
        let item = item_from_comment(&comment);
        assert_eq!(comment_from_item(&item), Ok(comment.clone()));
        assert_eq!(sort_key_from_item(&item), Ok(comment.sort_key()));
    }
}

#[test]
fn the_item_carries_both_gsi_keys_and_a_count_only_when_voted_for() {
    let item = item_from_comment(&sample(None));
    assert!(!item.contains_key(HELPFUL_COUNT), "no votes, no attribute");
    assert_eq!(
        item_from_comment(&sample(Some(1)))[HELPFUL_COUNT].as_number(),
        Some("7")
    );
    assert_eq!(item[SKU_RATING].as_string(), Some("DAFT_PUNK_TSHIRT#4"));
    assert_eq!(
        item[SORT_KEY].as_string(),
        Some(format!("1700000000123#{}", sample(None).id).as_str())
    );
}

#[test]
fn the_stored_rank_is_current_only_for_the_count_and_key_it_was_made_of() {
    let comment = sample(Some(1));
    let mut item = item_from_comment(&comment);
    assert!(rank_is_current(&item, &comment));
    assert!(!rank_is_current(
        &item,
        &Comment {
            helpful_count: 8,
            ..comment.clone()
        }
    ));
    item.remove(HELPFUL_RANK);
    assert!(!rank_is_current(&item, &comment));
}

#[test]
fn a_stream_image_decodes_with_the_same_function() {
    use aws_sdk_dynamodbstreams::types::AttributeValue as StreamValue;
    let comment = sample(Some(5));
    let image: HashMap<String, StreamValue> = item_from_comment(&comment)
        .into_iter()
        .map(|(name, value)| {
            let value = match value {
                AttributeValue::N(n) => StreamValue::N(n),
                AttributeValue::S(s) => StreamValue::S(s),
                other => panic!("unexpected attribute {other:?}"),
            };
            (name, value)
        })
        .collect();
    assert_eq!(comment_from_item(&image), Ok(comment));
}

#[test]
fn malformed_items_are_refused_with_the_attribute_named() {
    let mut item = item_from_comment(&sample(None));
    item.insert(RATING.to_owned(), n(9));
    assert_eq!(
        comment_from_item(&item).map_err(|e| e.attribute),
        Err(RATING)
    );

    let mut item = item_from_comment(&sample(None));
    item.insert(
        SORT_KEY.to_owned(),
        s("0000000000001#01ARZ3NDEKTSV4RRFFQ69G5FAV"),
    );
    assert_eq!(
        comment_from_item(&item).map_err(|e| e.attribute),
        Err(SORT_KEY)
    );

    let mut item = item_from_comment(&sample(None));
    item.remove(BODY);
    assert_eq!(comment_from_item(&item).map_err(|e| e.attribute), Err(BODY));

    let mut item = item_from_comment(&sample(None));
    item.insert(VERSION.to_owned(), s("7"));
    assert_eq!(
        comment_from_item(&item).map_err(|e| e.attribute),
        Err(VERSION)
    );
}

#[test]
fn a_version_past_the_ceiling_is_refused_with_the_item_named() {
    use crate::domain::MAX_VERSION;
    let comment = sample(None);
    let mut item = item_from_comment(&comment);
    item.insert(VERSION.to_owned(), n(MAX_VERSION));
    assert_eq!(comment_from_item(&item).map(|c| c.version), Ok(MAX_VERSION));
    for past in [
        (MAX_VERSION + 1).to_string(),
        u64::MAX.to_string(),
        "18446744073709551616".to_owned(),
        "0".to_owned(),
        "-1".to_owned(),
    ] {
        item.insert(VERSION.to_owned(), n(&past));
        let refused = comment_from_item(&item).expect_err(&past);
        assert_eq!(refused.attribute, VERSION, "{past}");
        assert_eq!(refused.item, Some(comment.id.to_string()), "{past}");
        assert!(
            refused.to_string().contains(&comment.id.to_string()),
            "{refused}"
        );
    }
}

#[test]
fn an_item_written_before_versions_is_at_version_1() {
    let edited = sample(Some(1_700_000_000_999));
    let mut item = item_from_comment(&edited);
    item.remove(VERSION);
    assert_eq!(
        comment_from_item(&item),
        Ok(Comment {
            version: 1,
            ..edited
        })
    );
}
