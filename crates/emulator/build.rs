//! Compiles the small C helper that gives the emulator C `long double` arithmetic (INCRBYFLOAT).
fn main() {
    println!("cargo:rerun-if-changed=csrc/longdouble.c");
    cc::Build::new().file("csrc/longdouble.c").warnings(true).compile("limitlab_longdouble");
}
