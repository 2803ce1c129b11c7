//! What a response says: rate-limit feedback, how long it stays fresh, HTTP dates, decimal
//! numbers in its headers, and the ISO 8601 time in `/usage`'s body.

pub mod decimal;
pub mod feedback;
pub mod freshness;
pub mod http_date;
pub(crate) mod iso_date;
