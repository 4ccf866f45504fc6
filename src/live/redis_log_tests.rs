//! The change log's entries: what is written reads back as the change it was.
use super::*;
use crate::domain::{CommentId, SortKey};

fn fields(event: &ChangeEvent) -> Fields {
    fields_of(event)
        .into_iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v))
        .collect()
}

#[test]
fn entries_read_back_as_the_changes_written_ratings_and_versions_included() {
    let sku = Sku::parse("LOGGED").expect("sku");
    let key = SortKey::new(
        1_767_225_600_123,
        CommentId::from_parts(1_767_225_600_000, 42),
    )
    .expect("key");
    let entry = |rating: i64, version: u64, status: CommentStatus| IndexEntry {
        verified: false,
        sku: sku.clone(),
        key,
        rating: Rating::new(rating).expect("rating"),
        version,
        helpful: 3,
        published: status.is_public(),
        status,
        author: None,
        reported: false,
    };
    let (published, pending) = (CommentStatus::Published, CommentStatus::Pending);
    let (hidden, rejected) = (CommentStatus::Hidden, CommentStatus::Rejected);
    for event in [
        ChangeEvent::Upsert {
            old: None,
            new: entry(5, 1, published),
        },
        ChangeEvent::Upsert {
            old: Some(entry(2, 3, published)),
            new: entry(4, 4, published),
        },
        ChangeEvent::Upsert {
            old: Some(entry(2, 3, pending)),
            new: entry(2, 4, published),
        },
        ChangeEvent::Upsert {
            old: Some(entry(2, 3, published)),
            new: entry(2, 4, hidden),
        },
        ChangeEvent::Upsert {
            old: Some(entry(2, 3, pending)),
            new: entry(2, 4, rejected),
        },
        ChangeEvent::removal(entry(3, 4, published)),
        ChangeEvent::removal(entry(3, 4, hidden)),
    ] {
        let read = change_of(&fields(&event)).expect("a change");
        assert_eq!(read.entry(), event.entry());
        assert_eq!(read.version(), event.version());
        assert_eq!(
            (read.was_public(), read.is_public(), read.withdraws()),
            (event.was_public(), event.is_public(), event.withdraws())
        );
        if let (
            ChangeEvent::Upsert { old: Some(a), .. },
            ChangeEvent::Upsert { old: Some(b), .. },
        ) = (&read, &event)
        {
            assert_eq!((a.rating, a.status), (b.rating, b.status));
        }
    }
    // A published comment's change carries neither flag: the entry is as before moderation.
    let public = fields(&ChangeEvent::removal(entry(3, 4, published)));
    assert_eq!(public.len(), 8);
    assert!(change_of(&public).expect("a change").entry().published);
    // The release before wrote `0` for any status but published: read as hidden.
    let mut older = fields(&ChangeEvent::removal(entry(3, 4, rejected)));
    older.retain(|(name, _)| name.as_slice() != b"a");
    older.push((b"a".to_vec(), b"0".to_vec()));
    assert_eq!(change_of(&older).expect("a change").entry().status, hidden);
    assert_eq!(change_of(&[]), None);
}
