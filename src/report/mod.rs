//! Tables (human text, markdown, JSON) and plots of simulation results.
