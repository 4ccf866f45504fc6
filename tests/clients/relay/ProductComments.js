// What a Relay app writes against schema.graphql: a paginated, refetchable fragment on
// Product.comments (Node interface, node(id:) refetch, spec connection shape), the query that
// spreads it, and mutations that update the connection in Relay's store. relay-compiler must
// accept all of it; nothing here runs.
import { graphql } from 'react-relay';

export const productComments = graphql`
  fragment ProductComments_product on Product
  @refetchable(queryName: "ProductCommentsPaginationQuery")
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 5 }
    cursor: { type: "String" }
    ratings: { type: "[Int!]" }
  ) {
    sku
    comments(first: $count, after: $cursor, ratings: $ratings)
      @connection(key: "ProductComments_comments", filters: ["ratings"]) {
      __id
      totalCount
      edges {
        node {
          id
          author
          body
          rating
          createdAt
          updatedAt
        }
      }
    }
  }
`;

export const olderFirst = graphql`
  fragment ProductComments_oldest on Product
  @refetchable(queryName: "ProductCommentsBackwardQuery")
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 5 }
    cursor: { type: "String" }
  ) {
    oldest: comments(last: $count, before: $cursor)
      @connection(key: "ProductComments_oldest") {
      edges {
        node {
          id
          rating
        }
      }
    }
  }
`;

export const productPage = graphql`
  query ProductCommentsPageQuery($sku: String!) {
    product(sku: $sku) {
      id
      ...ProductComments_product
      ...ProductComments_oldest
    }
  }
`;

export const addComment = graphql`
  mutation ProductCommentsAddMutation($input: AddCommentInput!, $connections: [ID!]!) {
    addComment(input: $input) {
      commentEdge @prependEdge(connections: $connections) {
        cursor
        node {
          id
          author
          body
          rating
          createdAt
        }
      }
      clientMutationId
    }
  }
`;

export const updateComment = graphql`
  mutation ProductCommentsUpdateMutation($input: UpdateCommentInput!) {
    updateComment(input: $input) {
      comment {
        id
        body
        rating
        updatedAt
      }
    }
  }
`;

export const deleteComment = graphql`
  mutation ProductCommentsDeleteMutation($input: DeleteCommentInput!, $connections: [ID!]!) {
    deleteComment(input: $input) {
      deletedCommentId @deleteEdge(connections: $connections) @deleteRecord
    }
  }
`;

export const refetchComment = graphql`
  query ProductCommentsNodeQuery($id: ID!) {
    node(id: $id) {
      id
      ... on Comment {
        body
        product {
          sku
        }
      }
    }
  }
`;
