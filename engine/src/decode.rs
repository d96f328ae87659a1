//! decode (in progress)
