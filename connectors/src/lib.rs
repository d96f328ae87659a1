//! eddy-connectors (in progress)
