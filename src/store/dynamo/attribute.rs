//! Read access to one attribute value, whichever SDK's type holds it: the table's
//! (`aws_sdk_dynamodb`), the stream's (`aws_sdk_dynamodbstreams`) and, in `super::lambda`, a
//! Lambda event's. The item codec decodes all three with one function through this trait, so
//! they read one format.

use aws_sdk_dynamodb::types::AttributeValue;

/// Read access to one attribute value, implemented for both SDKs' `AttributeValue` types.
pub trait ItemAttribute {
    /// The value if it is a string (`S`).
    fn as_string(&self) -> Option<&str>;
    /// The decimal text if it is a number (`N`).
    fn as_number(&self) -> Option<&str>;
}

impl ItemAttribute for AttributeValue {
    fn as_string(&self) -> Option<&str> {
        self.as_s().ok().map(String::as_str)
    }

    fn as_number(&self) -> Option<&str> {
        self.as_n().ok().map(String::as_str)
    }
}

impl ItemAttribute for aws_sdk_dynamodbstreams::types::AttributeValue {
    fn as_string(&self) -> Option<&str> {
        self.as_s().ok().map(String::as_str)
    }

    fn as_number(&self) -> Option<&str> {
        self.as_n().ok().map(String::as_str)
    }
}
