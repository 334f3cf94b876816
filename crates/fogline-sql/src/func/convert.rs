//! Placeholder; filled in by a later commit.

use super::Scalar;

pub(super) const FUNCS: &[Scalar] = &[];
