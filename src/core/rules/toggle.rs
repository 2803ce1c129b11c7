//! An option given as a flag or as an object of settings (`retry`, `cache`): what each flag
//! means is the option's own rule, beside its settings (`RetryGiven::toggled`,
//! `CacheConfig::toggled`).

/// A flag or an object's fields, as given.
#[derive(Debug, Clone, PartialEq)]
pub enum Toggle<T> {
    /// `true` or `false`.
    Flag(bool),
    /// The object's fields.
    Given(T),
}
