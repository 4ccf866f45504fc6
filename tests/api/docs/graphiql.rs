//! The GraphiQL chapter's list of tabs is the page's: the tabs `/` opens with, in order, each
//! named by its operation and holding its file's text.

use super::markdown::Document;
use crate::helpers::TestApp;
use crate::helpers::repo::repo_file;

/// The rows between `<!-- playground-tabs -->` and its end: (tab, file under `playground/`).
fn documented_tabs() -> Vec<(String, String)> {
    let document = Document::read("docs/graphiql.md");
    let start = document
        .text
        .find("<!-- playground-tabs -->")
        .expect("a `<!-- playground-tabs -->` table");
    let end = document.text[start..]
        .find("<!-- /playground-tabs -->")
        .expect("its end")
        + start;
    document.text[start..end]
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let file = cells.get(2)?.split('`').nth(1)?;
            (file.ends_with(".graphql")).then(|| (cells[1].to_owned(), file.to_owned()))
        })
        .collect()
}

/// The name of a document's first operation (`query FirstPage(` → `FirstPage`).
fn operation_name(document: &str) -> Option<String> {
    document.lines().find_map(|line| {
        let rest = ["query ", "mutation ", "subscription "]
            .iter()
            .find_map(|keyword| line.strip_prefix(keyword))?;
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        Some(rest[..end].to_owned())
    })
}

#[tokio::test]
async fn the_graphiql_chapter_lists_the_tabs_the_page_opens_with_in_order() {
    let app = TestApp::embedded(10).await;
    let page = app
        .client
        .get(format!("{}/", app.address))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("the page");
    let start = page
        .find("type=\"application/json\">")
        .expect("the tabs' JSON")
        + "type=\"application/json\">".len();
    let end = start + page[start..].find("</script>").expect("its end");
    let tabs: Vec<serde_json::Value> =
        serde_json::from_str(&page[start..end].replace("\\u003c", "<")).expect("JSON");
    let served: Vec<(String, String)> = tabs
        .iter()
        .map(|tab| {
            let query = tab["query"].as_str().expect("a query").to_owned();
            (operation_name(&query).expect("a named operation"), query)
        })
        .collect();
    let documented = documented_tabs();
    let names = |tabs: &[(String, String)]| tabs.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&documented),
        names(&served),
        "docs/graphiql.md's tabs against the page's"
    );
    for ((name, file), (_, query)) in documented.iter().zip(&served) {
        assert_eq!(
            &repo_file(&format!("playground/{file}")),
            query,
            "the {name} tab is not {file}"
        );
    }
}
