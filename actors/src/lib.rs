//! eddy-actors (in progress)
