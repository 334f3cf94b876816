//! eKuiper's documented examples.
