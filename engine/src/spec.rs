//! spec (in progress)
