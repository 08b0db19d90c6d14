//! `limitlab cli`: redis-cli syntax in, redis-cli output out, on the emulator.
