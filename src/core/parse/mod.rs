//! What a response's headers say: rate-limit feedback, HTTP dates, decimal numbers.

pub mod decimal;
pub mod feedback;
pub mod http_date;
