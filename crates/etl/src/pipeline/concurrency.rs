//! `[target] concurrency` and `max_requests_per_second`: how many requests a
//! run keeps in flight and how fast it may send them. `"adaptive"` (the
//! default) lets the run's controller (`load::controller`) find the limit;
//! a number pins it, as files written before the controller keep doing.

use super::reader::{Ctx, Table};
use toml::de::DeValue;

/// Requests in flight for a run.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub enum Concurrency {
    /// Found by the run's controller between 1 and [`ADAPTIVE_MAX`].
    #[default]
    Adaptive,
    /// Pinned by the file or `--concurrency N`.
    Fixed(usize),
}

/// The adaptive controller's upper bound: at 50 ms a request, 5,000
/// requests a second, more than one target writer takes.
pub const ADAPTIVE_MAX: usize = 256;
/// The largest number a file or `--concurrency` may pin.
pub const FIXED_MAX: usize = 1024;

impl Concurrency {
    /// The most requests that may ever be in flight at once.
    pub fn max(self) -> usize {
        match self {
            Concurrency::Adaptive => ADAPTIVE_MAX,
            Concurrency::Fixed(n) => n.max(1),
        }
    }
}

/// Debug prints what the file says (`3`, `"adaptive"`), as parsed-pipeline
/// dumps show other keys.
impl std::fmt::Debug for Concurrency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Concurrency::Adaptive => f.write_str("\"adaptive\""),
            Concurrency::Fixed(n) => write!(f, "{n}"),
        }
    }
}

/// `concurrency`: `"adaptive"` or a whole number from 1 to 1024.
pub(super) fn parse(t: &Table, ctx: &mut Ctx) -> Concurrency {
    let Some(v) = t.get("concurrency") else {
        return Concurrency::Adaptive;
    };
    match v.get_ref() {
        DeValue::String(s) if s.as_ref() == "adaptive" => Concurrency::Adaptive,
        DeValue::String(s) => {
            ctx.error(
                v.span(),
                format!(
                    "`concurrency` in [target] must be \"adaptive\" or a whole number from 1 to {FIXED_MAX}, not \"{s}\""
                ),
            );
            Concurrency::Adaptive
        }
        _ => t
            .int(ctx, "concurrency", 1..FIXED_MAX as i64 + 1)
            .map_or(Concurrency::Adaptive, |n| Concurrency::Fixed(n as usize)),
    }
}

/// `max_requests_per_second`: a whole number from 1 to 100,000.
pub(super) fn max_rate(t: &Table, ctx: &mut Ctx) -> Option<u32> {
    t.int(ctx, "max_requests_per_second", 1..100_001)
        .map(|n| n as u32)
}
