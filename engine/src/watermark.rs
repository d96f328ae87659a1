//! watermark (in progress)
