//! The shop website (`/demo`) as shoppers and search engines see it, against the API it calls.

mod demo;
mod demo_pages;
mod moderate;
mod report;
mod verified;
