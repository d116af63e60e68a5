//! A running host changed by its operator: installs, grants and settings asked for
//! and confirmed ([`Operator`], [`Change`], [`Asking`]), previews, downloads and
//! skills that failed to load.

pub use crate::host::{
    Asking, Change, DownloadProgress, LISTING_TTL, LoadError, Operator, Preview,
};
