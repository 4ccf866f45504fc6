// What a client team writes against the generated types: it compiles only while the
// operations in playground/*.graphql keep the shapes it reads (`tsc -p codegen`, run by
// tests/api/clients/codegen.rs after GraphQL Code Generator wrote __generated__/operations.ts).
import type {
  AddCommentMutation,
  CommentEventsSubscription,
  FirstPageQuery,
  NextPageQueryVariables,
  PageCursorsQuery,
} from './__generated__/operations';

export function newestAuthors(page: FirstPageQuery): string[] {
  return page.product?.comments.edges.map((edge) => edge.node.author) ?? [];
}

export function nextPage(page: FirstPageQuery): NextPageQueryVariables | null {
  const connection = page.product?.comments;
  if (!connection?.pageInfo.hasNextPage) return null;
  return { sku: 'DAFT_PUNK_TSHIRT', after: connection.pageInfo.endCursor };
}

export function pageNumbers(page: PageCursorsQuery): number[] {
  return page.comments.pageCursors?.around.map((cursor) => cursor.page) ?? [];
}

export function added(payload: AddCommentMutation): { id: string; cursor: string } {
  return { id: payload.addComment.comment.id, cursor: payload.addComment.commentEdge.cursor };
}

export function eventKind(event: CommentEventsSubscription): 'ADDED' | 'UPDATED' | 'DELETED' {
  return event.commentEvents.kind;
}
