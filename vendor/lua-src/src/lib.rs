//! Builds the patched Lua 5.1.5 in `lua-5.1.5/` as a static library, for mlua-sys's build script.
//!
//! mlua-sys calls `lua_src::Build::new().build(lua_src::Lua51)` and then `print_cargo_metadata()`;
//! that is the whole interface this crate keeps. Only Lua 5.1 is here: the other versions exist in
//! the enum so the call sites of mlua-sys for them still compile, and asking for one fails the build.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

/// The Lua versions mlua-sys can ask for. Only [`Lua51`] is built.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Version {
    Lua51,
    Lua52,
    Lua53,
    Lua54,
    Lua55,
}
pub use self::Version::*;

/// How to build (the defaults come from the build-script environment cargo sets).
#[derive(Default)]
pub struct Build {
    out_dir: Option<PathBuf>,
}

/// Where the built library and its headers are.
#[derive(Clone, Debug)]
pub struct Artifacts {
    include_dir: PathBuf,
    lib_dir: PathBuf,
    lib_name: &'static str,
}

impl Build {
    pub fn new() -> Build {
        Build { out_dir: env::var_os("OUT_DIR").map(PathBuf::from) }
    }

    /// Sets the output directory (needed outside a build script).
    pub fn out_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut Build {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Compiles Lua; panics (failing the build with the reason) on any error.
    pub fn build(&self, version: Version) -> Artifacts {
        if version != Lua51 {
            panic!("limitlab's lua-src only carries Lua 5.1, not {version:?}");
        }
        let out = self.out_dir.clone().expect("OUT_DIR is not set: run from a build script");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("lua-5.1.5");
        let (lib_dir, include_dir) = (out.join("lib"), out.join("include"));
        fs::create_dir_all(&include_dir).expect("cannot create the include directory");
        // One translation unit (lua-5.1.5/limitlab_one.c includes every other .c file).
        let one = src.join("limitlab_one.c");
        let mut cc = cc::Build::new();
        cc.warnings(false)
            .cargo_metadata(false)
            .include(&src)
            .file(&one)
            .flag_if_supported("-fno-common")
            .out_dir(&lib_dir);
        if env::var("TARGET").map(|t| t.contains("linux") || t.contains("bsd")).unwrap_or(false) {
            cc.define("LUA_USE_LINUX", None);
        } else {
            cc.define("LUA_USE_POSIX", None);
        }
        cc.compile("lua5.1");
        for h in ["lauxlib.h", "lua.h", "luaconf.h", "lualib.h"] {
            fs::copy(src.join(h), include_dir.join(h)).expect("cannot copy a Lua header");
        }
        for e in fs::read_dir(&src).expect("cannot read lua-5.1.5") {
            println!("cargo:rerun-if-changed={}", e.expect("cannot read lua-5.1.5").path().display());
        }
        Artifacts { include_dir, lib_dir, lib_name: "lua5.1" }
    }
}

impl Artifacts {
    pub fn include_dir(&self) -> &Path {
        &self.include_dir
    }

    pub fn lib_dir(&self) -> &Path {
        &self.lib_dir
    }

    /// Tells cargo to link the static library.
    pub fn print_cargo_metadata(&self) {
        println!("cargo:rustc-link-search=native={}", self.lib_dir.display());
        println!("cargo:rustc-link-lib=static={}", self.lib_name);
        println!("cargo:include={}", self.include_dir.display());
        println!("cargo:lib={}", self.lib_dir.display());
    }
}
