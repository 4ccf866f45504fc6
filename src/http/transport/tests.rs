use axum::http::{HeaderMap, HeaderValue, StatusCode, header};

use super::{MediaType, negotiate};

fn accept(value: &str) -> Result<MediaType, StatusCode> {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::ACCEPT,
        HeaderValue::from_str(value).expect("header"),
    );
    negotiate(&headers).map_err(|r| r.status)
}

#[test]
fn the_accept_header_picks_the_media_type() {
    assert_eq!(negotiate(&HeaderMap::new()).ok(), Some(MediaType::Json));
    assert_eq!(accept("application/json"), Ok(MediaType::Json));
    assert_eq!(
        accept("application/graphql-response+json"),
        Ok(MediaType::GraphQlResponse)
    );
    assert_eq!(
        accept("application/graphql-response+json, application/json;q=0.9"),
        Ok(MediaType::GraphQlResponse)
    );
    assert_eq!(
        accept("application/json, application/graphql-response+json"),
        Ok(MediaType::Json),
        "on a tie the first wins"
    );
    assert_eq!(
        accept("application/json;q=0.5, application/graphql-response+json"),
        Ok(MediaType::GraphQlResponse)
    );
    assert_eq!(accept("*/*"), Ok(MediaType::Json));
    assert_eq!(accept("text/html, */*;q=0.8"), Ok(MediaType::Json));
    assert_eq!(
        accept("application/json; charset=utf-8"),
        Ok(MediaType::Json)
    );
}

#[test]
fn an_accept_header_without_a_supported_type_is_refused_with_406() {
    assert_eq!(accept("text/html"), Err(StatusCode::NOT_ACCEPTABLE));
    assert_eq!(
        accept("application/json;q=0"),
        Err(StatusCode::NOT_ACCEPTABLE)
    );
}
