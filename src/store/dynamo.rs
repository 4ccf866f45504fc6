//! The DynamoDB adapter (to be written).
