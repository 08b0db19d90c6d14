//! Seeded traffic generators, one file each, and trace readers.
