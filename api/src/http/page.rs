//! Pagination parameters: `limit` (default 50), and either a one-based `page` or an `offset`.

use serde::Deserialize;

use super::envelope::Meta;
use super::error::ApiError;
pub use crate::services::Page;

pub const DEFAULT_LIMIT: i64 = 50;

/// Read as text and parsed by [`PageQuery::resolve`] (so a bad value gets the contract's
/// message); documented as the integers it takes.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page number from 1 (not with `offset`).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 1000000)]
    pub page: Option<String>,
    /// Items per page: default 50, at most the endpoint's maximum (series 200, others 100).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200)]
    pub limit: Option<String>,
    /// Items to skip (not with `page`).
    #[param(value_type = Option<i64>, minimum = 0, maximum = 100000000)]
    pub offset: Option<String>,
}

fn integer(name: &str, value: &str, min: i64, max: i64) -> Result<i64, ApiError> {
    value
        .parse::<i64>()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| ApiError::InvalidInput(format!("{name} must be an integer from {min} to {max}, got {value:?}")))
}

impl PageQuery {
    /// The page asked for, with `limit` at most `max`.
    pub fn resolve(&self, max: i64) -> Result<Page, ApiError> {
        let limit = match &self.limit {
            Some(l) => integer("limit", l, 1, max)?,
            None => DEFAULT_LIMIT.min(max),
        };
        let offset = match (&self.page, &self.offset) {
            (Some(_), Some(_)) => return Err(ApiError::InvalidInput("give page or offset, not both".into())),
            (Some(p), None) => (integer("page", p, 1, 1_000_000)? - 1) * limit,
            (None, Some(o)) => integer("offset", o, 0, 100_000_000)?,
            (None, None) => 0,
        };
        Ok(Page { limit, offset })
    }
}

/// A zero-indexed page (`page` from 0, as the contract has it for intervals threaded and the
/// crowd leaderboard) of `limit` (default `default`, at most `max`).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ZeroBasedPage {
    /// Page number from 0.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 1000000)]
    pub page: Option<String>,
    /// Items per page: default 30 (50 for `/v1/intervals`), at most 200.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200)]
    pub limit: Option<String>,
}

impl ZeroBasedPage {
    pub fn resolve(&self, default: i64, max: i64) -> Result<(Page, Meta), ApiError> {
        let limit = self.limit.as_deref().map_or(Ok(default.min(max)), |l| integer("limit", l, 1, max))?;
        let page = self.page.as_deref().map_or(Ok(0), |p| integer("page", p, 0, 1_000_000))?;
        Ok((Page { limit, offset: page * limit }, Meta { page: Some(page as u64), limit: Some(limit as u64), total: None }))
    }
}

impl Page {
    pub fn meta(&self, total: i64) -> Meta {
        Meta { page: Some((self.offset / self.limit + 1) as u64), limit: Some(self.limit as u64), total: Some(total as u64) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(page: Option<&str>, limit: Option<&str>, offset: Option<&str>) -> PageQuery {
        PageQuery { page: page.map(Into::into), limit: limit.map(Into::into), offset: offset.map(Into::into) }
    }

    #[test]
    fn pages() {
        assert_eq!(q(None, None, None).resolve(200).unwrap(), Page { limit: 50, offset: 0 });
        assert_eq!(q(Some("3"), Some("20"), None).resolve(200).unwrap(), Page { limit: 20, offset: 40 });
        assert_eq!(q(None, Some("10"), Some("5")).resolve(100).unwrap(), Page { limit: 10, offset: 5 });
        for bad in [q(None, Some("201"), None), q(None, Some("0"), None), q(Some("0"), None, None), q(None, Some("x"), None), q(Some("1"), None, Some("0"))] {
            assert!(bad.resolve(200).is_err());
        }
        let e = q(None, Some("101"), None).resolve(100).unwrap_err();
        assert!(e.to_string().contains("limit"));
    }

    #[test]
    fn zero_based_pages() {
        let z = |page: Option<&str>, limit: Option<&str>| ZeroBasedPage { page: page.map(Into::into), limit: limit.map(Into::into) };
        let (page, meta) = z(None, None).resolve(30, 200).unwrap();
        assert_eq!((page, meta.page, meta.limit), (Page { limit: 30, offset: 0 }, Some(0), Some(30)));
        assert_eq!(z(Some("2"), Some("10")).resolve(30, 200).unwrap().0, Page { limit: 10, offset: 20 });
        for (page, limit) in [(Some("-1"), None), (None, Some("0")), (None, Some("201")), (Some("x"), None)] {
            assert!(z(page, limit).resolve(30, 200).is_err());
        }
    }
}
