//! Compiles the patched Lua 5.1.5 in `lua-5.1.5/` as one static library, which this crate carries
//! to every binary that links it (mlua-sys, built with `external`, compiles no Lua of its own).
use std::env;
use std::path::Path;

fn main() {
    let src = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("lua-5.1.5");
    // One translation unit (lua-5.1.5/limitlab_one.c includes every other .c file), so the compiler
    // can inline across Lua's files, and so the library is one object: whatever pulls one of its
    // symbols in pulls all of them.
    let mut cc = cc::Build::new();
    cc.warnings(false)
        .include(&src)
        .file(src.join("limitlab_one.c"))
        .flag_if_supported("-fno-common")
        .cargo_metadata(false);
    let target = env::var("TARGET").unwrap_or_default();
    if target.contains("linux") || target.contains("bsd") {
        cc.define("LUA_USE_LINUX", None);
    } else {
        cc.define("LUA_USE_POSIX", None);
    }
    cc.compile("limitlab_lua51");
    let out = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo:rustc-link-search=native={out}");
    // Whole archive: the object is kept even where the linker meets this library before the crates
    // that call Lua (mlua-sys, mlua), which a dependency graph does not order.
    println!("cargo:rustc-link-lib=static:+whole-archive=limitlab_lua51");
    println!("cargo:include={}", src.display());
    for e in std::fs::read_dir(&src).expect("cannot read lua-5.1.5") {
        println!("cargo:rerun-if-changed={}", e.expect("cannot read lua-5.1.5").path().display());
    }
    println!("cargo:rerun-if-changed=build.rs");
}
